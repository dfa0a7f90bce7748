/// Base64url without padding (RFC 4648 §5): random identifiers (tokens, secrets, stream tickets) and the
/// `HTTP2-Settings` header of an h2c upgrade.
public enum Base64URL {
    public static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Encodes `bytes` without padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output.append(alphabet[Int(chunk >> 18 & 63)])
            output.append(alphabet[Int(chunk >> 12 & 63)])
            output.append(alphabet[Int(chunk >> 6 & 63)])
            output.append(alphabet[Int(chunk & 63)])
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            let chunk = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
            output.append(alphabet[Int(chunk >> 18 & 63)])
            output.append(alphabet[Int(chunk >> 12 & 63)])
            if rest == 2 { output.append(alphabet[Int(chunk >> 6 & 63)]) }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Whether `byte` is in the base64url alphabet `[A-Za-z0-9_-]` (a bitmap test, no branches per class).
    /// Inlinable: callers in other modules (token checks, per byte) get the bitmap test, not a call.
    @inlinable
    public static func isAlphabetByte(_ byte: UInt8) -> Bool {
        let mask = byte < 64 ? alphabetLow : (byte < 128 ? alphabetHigh : 0)
        return (mask >> UInt64(byte & 63)) & 1 != 0
    }

    /// Bits 0…63 of the alphabet's set: '-' (45), '0'…'9' (48…57).
    @usableFromInline static var alphabetLow: UInt64 { (1 << 45) | (0x3FF << 48) }
    /// Bits 64…127 (the byte minus 64): 'A'…'Z' (65…90), '_' (95), 'a'…'z' (97…122).
    @usableFromInline static var alphabetHigh: UInt64 { (0x3FF_FFFF << 1) | (1 << 31) | (0x3FF_FFFF << 33) }

    /// Whether every byte of `bytes` is in the base64url alphabet (``isAlphabetByte(_:)``'s set): eight bytes at a
    /// time (``alphabetBytes(_:)``), the last few one by one (a token's 150 characters are checked on every send).
    public static func isAlphabet(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let raw = UnsafeRawBufferPointer(bytes)
        let highs: UInt64 = 0x8080_8080_8080_8080
        var missing: UInt64 = 0
        var index = 0
        while index + 8 <= bytes.count {
            let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            missing |= ~alphabetBytes(word) & highs
            index += 8
        }
        while index < bytes.count {
            if !isAlphabetByte(bytes[index]) { return false }
            index += 1
        }
        return missing == 0
    }

    /// The high bit of each byte of `word` that is in the alphabet: ranges and equalities on the bytes' low seven
    /// bits, each byte's sum kept below 0x100 (no carry into the next byte, so every byte's answer is exact), and
    /// a byte with its high bit set in none.
    @inline(__always)
    static func alphabetBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let low = word & ~highs
        // `low + (0x80 - first)` has its byte's high bit set exactly when the byte is at least `first`.
        @inline(__always) func atLeast(_ first: UInt64) -> UInt64 { low &+ ones &* (0x80 - first) }
        @inline(__always) func within(_ first: UInt64, _ last: UInt64) -> UInt64 { atLeast(first) & ~atLeast(last + 1) }
        // A byte of `x` (high bit clear) is zero exactly when adding 0x7F leaves its high bit clear.
        @inline(__always) func equal(_ byte: UInt64) -> UInt64 {
            let x = low ^ (ones &* byte)
            return ~(x &+ ~highs)
        }
        let found = within(0x41, 0x5A) | within(0x61, 0x7A) | within(0x30, 0x39) | equal(0x2D) | equal(0x5F)
        return found & ~word & highs
    }

    /// `count` random bytes.
    public static func randomBytes(_ count: Int, using generator: inout some RandomNumberGenerator) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 8)
        while bytes.count < count {
            var word = generator.next()
            for _ in 0..<8 where bytes.count < count {
                bytes.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return bytes
    }

    /// A random character of `[A-Za-z0-9]`, the alphabet without `-` and `_` (log2 62 ≈ 5.95 random bits).
    public static func randomAlphanumeric(using generator: inout some RandomNumberGenerator) -> UInt8 {
        alphabet[Int(generator.next(upperBound: UInt64(62)))]
    }

    /// A random base64url string of `count` characters (6 random bits each).
    public static func randomString(length: Int, using generator: inout some RandomNumberGenerator) -> String {
        String(decoding: randomBytes(length, using: &generator).map { alphabet[Int($0 & 63)] }, as: UTF8.self)
    }

    /// Decodes base64url, or standard base64 (`+` and `/`), with or without `=` padding; `nil` for any other byte.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in text.utf8 {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = byte - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"), UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "_"), UInt8(ascii: "/"): value = 63
            case UInt8(ascii: "="): continue
            default: return nil
            }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return output
    }
}

