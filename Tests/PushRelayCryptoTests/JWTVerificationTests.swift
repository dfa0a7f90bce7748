import PushRelayCore
import PushRelayWire
import PushRelayCrypto
import Testing

/// RS256 JWTs as the `/token` route checks them: libcrypto signs and verifies, the core splits and checks claims.
@Suite struct JWTVerificationTests {
    static let key = try! RSAPrivateKey.generate()
    static let audience = "http://127.0.0.1:8080/token"
    static let issuer = ServiceAccountFile.clientEmail(project: "shop")
    static let now: Int64 = 1_700_000_000

    static func assertion(
        claims: JSONValue? = nil, key: RSAPrivateKey = JWTVerificationTests.key, alg: String = "RS256"
    ) throws -> String {
        let claims = claims ?? [
            "iss": .string(issuer), "aud": .string(audience),
            "scope": "https://www.googleapis.com/auth/firebase.messaging",
            "iat": .integer(now), "exp": .integer(now + 3600),
        ]
        return try JWT.encode(header: ["alg": .string(alg), "typ": "JWT", "kid": "k1"], claims: claims) {
            try key.signRS256($0)
        }
    }

    @Test func generatedKeyIsPKCS8RSA2048AndItsPublicHalfRoundTrips() throws {
        let pem = Self.key.pkcs8PEM
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        let reread = try RSAPrivateKey(pem: pem)
        let publicPEM = try reread.publicKey.pem
        #expect(publicPEM.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
        #expect(try RSAPublicKey(pem: publicPEM).pem == publicPEM)
    }

    @Test func validSignatureAndClaimsPass() throws {
        let jwt = try JWT.parse(try Self.assertion())
        #expect(jwt.keyID == "k1")
        #expect(try Self.key.publicKey.verifyRS256(signature: jwt.signature, message: jwt.signingInput))
        let claims = try ServiceAccountGrant(jwt: jwt).validate(issuer: Self.issuer, audience: Self.audience, now: Self.now)
        #expect(claims.expiresAt == Self.now + 3600)
    }

    @Test func tamperedClaimsOrSignatureOrAnotherKeyFail() throws {
        let text = try Self.assertion()
        var parts = text.split(separator: ".").map(String.init)
        // Another claim set under the original signature.
        let other = try Self.assertion(claims: ["iss": .string(Self.issuer), "aud": "x", "iat": 1, "exp": 2])
        parts[1] = String(other.split(separator: ".")[1])
        let tampered = try JWT.parse(parts.joined(separator: "."))
        #expect(try !Self.key.publicKey.verifyRS256(signature: tampered.signature, message: tampered.signingInput))
        var jwt = try JWT.parse(text)
        jwt.signature[10] ^= 1
        #expect(try !Self.key.publicKey.verifyRS256(signature: jwt.signature, message: jwt.signingInput))
        let stranger = try RSAPrivateKey.generate()
        let foreign = try JWT.parse(try Self.assertion(key: stranger))
        #expect(try !Self.key.publicKey.verifyRS256(signature: foreign.signature, message: foreign.signingInput))
        #expect(try !Self.key.publicKey.verifyRS256(signature: [], message: foreign.signingInput))
    }

    static let badClaims: [(String, JSONValue)] = [
        ("audience", ["aud": "http://elsewhere/token"]),
        ("issuer", ["iss": "someone@else"]),
        ("expired", ["iat": .integer(now - 7200), "exp": .integer(now - 3600)]),
        ("future", ["iat": .integer(now + 600), "exp": .integer(now + 1200)]),
        ("too long", ["exp": .integer(now + 3601)]),
        ("not integer", ["exp": "soon"]),
        ("lifetime overflows", ["iat": .integer(.min), "exp": .integer(0)]),
        ("lifetime overflows the other way", ["iat": .integer(-1), "exp": .integer(.max)]),
    ]

    @Test(arguments: 0..<8)
    func badClaimsAreInvalidGrant(_ index: Int) throws {
        let (name, change) = Self.badClaims[index]
        let base: JSONValue = [
            "iss": .string(Self.issuer), "aud": .string(Self.audience),
            "scope": "https://www.googleapis.com/auth/cloud-platform", "iat": .integer(Self.now),
            "exp": .integer(Self.now + 3600),
        ]
        var claims = base.objectValue!
        for member in change.objectValue! { claims[member.key] = member.value }
        let grant = ServiceAccountGrant(jwt: try JWT.parse(try Self.assertion(claims: .object(claims))))
        #expect(throws: OAuthError.self) {
            try grant.validate(issuer: Self.issuer, audience: Self.audience, now: Self.now)
        }
        #expect(oauthCode { () throws(OAuthError) in _ = try grant.validate(issuer: Self.issuer, audience: Self.audience, now: Self.now) }
            == .invalidGrant, "\(name)")
    }

    @Test func clockSkewOfAMinuteIsAllowed() throws {
        let claims: JSONValue = [
            "iss": .string(Self.issuer), "aud": .string(Self.audience),
            "scope": "https://www.googleapis.com/auth/firebase.messaging",
            "iat": .integer(Self.now + 50), "exp": .integer(Self.now + 3650),
        ]
        let grant = ServiceAccountGrant(jwt: try JWT.parse(try Self.assertion(claims: claims)))
        _ = try grant.validate(issuer: Self.issuer, audience: Self.audience, now: Self.now)
        _ = try grant.validate(issuer: Self.issuer, audience: Self.audience, now: Self.now + 3650 + 50)
    }

    @Test func wrongScopeIsInvalidScopeAndWrongAlgorithmInvalidGrant() throws {
        let claims: JSONValue = [
            "iss": .string(Self.issuer), "aud": .string(Self.audience),
            "scope": "https://www.googleapis.com/auth/devstorage.read_only",
            "iat": .integer(Self.now), "exp": .integer(Self.now + 3600),
        ]
        let grant = ServiceAccountGrant(jwt: try JWT.parse(try Self.assertion(claims: claims)))
        #expect(throws: OAuthError(code: .invalidScope, message: "Invalid OAuth scope: https://www.googleapis.com/auth/devstorage.read_only; firebase.messaging or cloud-platform is required")) {
            try grant.validate(issuer: Self.issuer, audience: Self.audience, now: Self.now)
        }
        let hs = ServiceAccountGrant(jwt: try JWT.parse(try Self.assertion(alg: "HS256")))
        #expect(throws: OAuthError.self) { try hs.validate(issuer: Self.issuer, audience: Self.audience, now: Self.now) }
    }

    @Test func tokenRequestFormIsRead() throws {
        let jwt = try Self.assertion()
        let body = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(jwt)"
        let grant = try ServiceAccountGrant.parse(form: Array(body.utf8))
        #expect(grant.jwt.keyID == "k1")
        #expect(throws: OAuthError.self) { try ServiceAccountGrant.parse(form: Array("grant_type=password".utf8)) }
        #expect(oauthCode { () throws(OAuthError) in _ = try ServiceAccountGrant.parse(form: Array("grant_type=password".utf8)) }
            == .unsupportedGrantType)
        let twoSegments = "grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=a.b"
        #expect(oauthCode { () throws(OAuthError) in _ = try ServiceAccountGrant.parse(form: Array(twoSegments.utf8)) } == .invalidRequest)
    }

    @Test func notAKeyIsRefused() {
        #expect(throws: CryptoError.self) { try RSAPublicKey(pem: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n") }
        #expect(throws: CryptoError.self) { try RSAPrivateKey(pem: "hello") }
    }
}

/// The code of the OAuth error `body` throws, or nil.
func oauthCode(_ body: () throws(OAuthError) -> Void) -> OAuthError.Code? {
    do {
        try body()
        return nil
    } catch {
        return error.code
    }
}
