import PushRelayCore
import Testing

/// A deterministic generator for tests (SplitMix64).
struct FakeRandomNumberGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("Tokens, secrets and ids")
struct IdentifierTests {
    @Test func generatedTokensAreWellFormedAndDistinct() {
        var seen = Set<String>()
        for _ in 0..<200 {
            let token = RegistrationToken.generate()
            #expect(RegistrationToken.isWellFormed(token.rawValue))
            #expect(token.rawValue.utf8.count == 139)
            #expect(token.instanceID.count == 22)
            #expect(token.rawValue.contains(":APA91b"))
            seen.insert(token.rawValue)
        }
        #expect(seen.count == 200)
    }

    /// A leading `-` made `pushrelay send --to TOKEN` read the token as an option (1 token in 64 before).
    @Test func generatedTokensNeverStartWithADash() {
        for _ in 0..<5_000 {
            let first = RegistrationToken.generate().rawValue.utf8.first!
            #expect(first != UInt8(ascii: "-") && first != UInt8(ascii: "_"))
        }
    }

    @Test func seededGenerationIsReproducible() {
        var a = FakeRandomNumberGenerator(state: 1)
        var b = FakeRandomNumberGenerator(state: 1)
        let first = RegistrationToken.generate(using: &a)
        #expect(first == RegistrationToken.generate(using: &b))
        #expect(RegistrationToken.isWellFormed(first.rawValue))
        // The token comes from the generator: the next draw, or another seed, gives another token.
        #expect(RegistrationToken.generate(using: &a) != first)
        var c = FakeRandomNumberGenerator(state: 2)
        #expect(RegistrationToken.generate(using: &c) != first)
    }

    @Test(arguments: [
        "", "APA91b" + String(repeating: "a", count: 30),
        "eeDh2Sd5HknG1zdC1w1UBD:APA91b" + String(repeating: "a", count: 21),
        "eeDh2Sd5HknG1zdC1w1UB:APA91b" + String(repeating: "a", count: 40),
        "eeDh2Sd5HknG1zdC1w1UBDx:APA91b" + String(repeating: "a", count: 40),
        "eeDh2Sd5HknG1zdC1w1UBD:APA91c" + String(repeating: "a", count: 40),
        "eeDh2Sd5HknG1zdC1w1UBD:APA91b" + String(repeating: "a", count: 39) + "=",
        "eeDh2Sd5HknG1zdC1w1UB+:APA91b" + String(repeating: "a", count: 40),
        "eeDh2Sd5HknG1zdC1w1UBD:APA91b" + String(repeating: "a", count: 39) + "é",
        "eeDh2Sd5HknG1zdC1w1UBD:APA91b" + String(repeating: "a", count: 4100),
    ])
    func malformedTokens(text: String) {
        #expect(!RegistrationToken.isWellFormed(text))
        #expect(RegistrationToken(text) == nil)
    }

    @Test func minimalToken() {
        #expect(RegistrationToken.isWellFormed("eeDh2Sd5HknG1zdC1w1UBD:APA91b" + String(repeating: "_", count: 22)))
    }

    @Test func secrets() {
        let secret = Credentials.deviceSecret()
        #expect(secret.hasPrefix("prd_") && secret.utf8.count == 47)
        let serverKey = Credentials.serverKey()
        #expect(serverKey.hasPrefix("AAAA") && serverKey.contains(":APA91b") && serverKey.utf8.count == 152)
        let clientKey = Credentials.clientKey()
        #expect(clientKey.hasPrefix("AIza") && clientKey.utf8.count == 39)
        #expect(Credentials.deviceSecret() != secret)
        #expect(Credentials.constantTimeEquals(Array(secret.utf8), Array(secret.utf8)))
        #expect(!Credentials.constantTimeEquals(Array(secret.utf8), Array(Credentials.deviceSecret().utf8)))
        #expect(!Credentials.constantTimeEquals(Array("ab".utf8), Array("abc".utf8)))
    }

    @Test func senderIDs() {
        for _ in 0..<100 {
            let id = SenderID.generate()
            #expect(id.description.utf8.count == 11)
            #expect(SenderID(id.description) == id)
        }
        #expect(SenderID("19283323559")?.value == 19_283_323_559)
        #expect(SenderID("") == nil)
        #expect(SenderID("12a") == nil)
        #expect(SenderID("-1") == nil)
    }

    @Test func messageIDText() {
        #expect(MessageID(1_603_214_613_006_763).description == "1603214613006763")
        #expect(MessageID("1603214613006763") == MessageID(1_603_214_613_006_763))
        #expect(MessageID("18446744073709551615") == MessageID(.max))
        for bad in ["", "x", "-1", "1.0", " 1", "18446744073709551616", "0x10"] { #expect(MessageID(bad) == nil) }
    }

    @Test func messageIDsIncreaseStrictly() {
        var generator = MessageIDGenerator()
        #expect(generator.next(now: 1_000) == MessageID(1_000))
        #expect(generator.next(now: 1_000) == MessageID(1_001))  // same microsecond
        #expect(generator.next(now: 900) == MessageID(1_002))  // clock went back
        #expect(generator.next(now: 5_000) == MessageID(5_000))
        let first = generator.next(now: 5_000, count: 3)
        #expect(first == MessageID(5_001))
        #expect(generator.last == 5_003)
        #expect(generator.next(now: 0) == MessageID(5_004))
        var restarted = MessageIDGenerator(last: 9_999)
        #expect(restarted.next(now: 10) == MessageID(10_000))
    }

    @Test func wallClockIsMicroseconds() {
        let now = WallClock.microsecondsSinceEpoch()
        #expect(now > 1_700_000_000_000_000)  // after 2023
        #expect(now < 4_000_000_000_000_000)  // before 2096
        var generator = MessageIDGenerator()
        let id = generator.next(now: now)
        #expect(id.description.utf8.count == 16)  // FCM-style, like 1603214613006763
    }

    @Test func multicastIDsArePositive63Bit() {
        var generator = FakeRandomNumberGenerator(state: 7)
        for _ in 0..<1000 {
            let id = MulticastID.generate(using: &generator)
            #expect(id.value > 0)
        }
        #expect(MulticastID.generate() != MulticastID.generate())
    }
}

@Suite("Authorization headers")
struct AuthorizationHeaderTests {
    @Test func serverKey() {
        #expect(AuthorizationHeader.serverKey("key=AAAA:APA91bX") == "AAAA:APA91bX")
        #expect(AuthorizationHeader.serverKey("Key = abc ") == "abc")
        #expect(AuthorizationHeader.serverKey("KEY=abc") == "abc")
        #expect(AuthorizationHeader.serverKey("key=") == nil)
        #expect(AuthorizationHeader.serverKey("Bearer abc") == nil)
        #expect(AuthorizationHeader.serverKey("keyabc") == nil)
        #expect(AuthorizationHeader.serverKey("") == nil)
        #expect(AuthorizationHeader.serverKey("\tkey\t=\tabc\t") == "abc")
        #expect(AuthorizationHeader.serverKey("key= é ") == "é")
        #expect(AuthorizationHeader.serverKey("kéy=abc") == nil)
        #expect(AuthorizationHeader.serverKey("key=\u{301}") == "\u{301}")
        #expect(AuthorizationHeader.serverKey("key    ") == nil)
        #expect(AuthorizationHeader.serverKey("kex=abc") == nil)
        #expect(AuthorizationHeader.serverKey("  key=a b\t") == "a b")
        #expect(AuthorizationHeader.serverKey("key \t=") == nil)
        #expect(AuthorizationHeader.serverKey("key=\t ") == nil)
        #expect(AuthorizationHeader.serverKey("key:abc") == nil)
        #expect(AuthorizationHeader.serverKey("é key=abc") == nil)
    }

    @Test func bearer() {
        #expect(AuthorizationHeader.bearer("Bearer prd_abc") == "prd_abc")
        #expect(AuthorizationHeader.bearer("bearer   prd_abc  ") == "prd_abc")
        #expect(AuthorizationHeader.bearer("Bearer") == nil)
        #expect(AuthorizationHeader.bearer("Bearer ") == nil)
        #expect(AuthorizationHeader.bearer("Bearerabc") == nil)
        #expect(AuthorizationHeader.bearer("Bearer a b") == nil)
        #expect(AuthorizationHeader.bearer("key=abc") == nil)
        #expect(AuthorizationHeader.bearer("BEARER\tabc") == "abc")
        #expect(AuthorizationHeader.bearer("Bearer éé ") == "éé")
        #expect(AuthorizationHeader.bearer("Béarer abc") == nil)
        #expect(AuthorizationHeader.bearer("Bearer\u{301} abc") == nil)
        #expect(AuthorizationHeader.bearer("Bearer a\tb") == "a\tb")
        #expect(AuthorizationHeader.bearer("\t Bearer x ") == "x")
        #expect(AuthorizationHeader.bearer("Bearer\t\t ") == nil)
        #expect(AuthorizationHeader.bearer("Bearer=abc") == nil)
    }
}

@Suite("ASCII case-insensitive comparisons")
struct ASCIICaseTests {
    @Test func prefixAndEquality() {
        #expect("Application/JSON; charset=utf-8".hasPrefixIgnoringASCIICase("application/json"))
        #expect("application/json".equalsIgnoringASCIICase("application/json"))
        #expect("APPLICATION/JSON"[...].equalsIgnoringASCIICase("application/json"))
        #expect(!"application/jso".hasPrefixIgnoringASCIICase("application/json"))
        #expect(!"application/json5".equalsIgnoringASCIICase("application/json"))
        #expect(!"".hasPrefixIgnoringASCIICase("key"))
        #expect("".hasPrefixIgnoringASCIICase(""))
        // Only ASCII letters fold: '@' is not '`', and non-ASCII never matches an ASCII letter.
        #expect(!"@".equalsIgnoringASCIICase("`"))
        #expect(!"\u{212A}ey".hasPrefixIgnoringASCIICase("key"))  // KELVIN SIGN lowercases to k in Unicode
        #expect(!"kéy".equalsIgnoringASCIICase("key"))
    }
}

@Suite("Token alphabet")
struct TokenAlphabetTests {
    @Test func everyByteIsClassifiedLikeTheRegex() {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        let prefix = "eeDh2Sd5HknG1zdC1w1UBD:APA91b" + String(repeating: "a", count: 30)
        for byte in UInt8(0)...UInt8(255) {
            var bytes = Array(prefix.utf8)
            bytes.append(byte)
            let text = String(decoding: bytes, as: UTF8.self)
            let valid = allowed.contains(byte)
            #expect(RegistrationToken.isWellFormed(text) == valid, "byte \(byte)")
        }
    }
}
