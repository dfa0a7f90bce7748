import COpenSSL

// The only file that calls libcrypto: SHA-256 of keys and secrets, constant-time comparison, random bytes.

/// The SHA-256 digest of a key or secret: what the store keeps instead of the clear value.
struct KeyHash: Hashable, Sendable {
    /// The 32 digest bytes.
    let bytes: [UInt8]

    /// Hashes a key as UTF-8.
    init(of key: String) {
        var utf8 = Array(key.utf8)
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        utf8.withUnsafeMutableBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { output in
                _ = SHA256(input.baseAddress, input.count, output.baseAddress)
            }
        }
        self.bytes = digest
    }

    /// Wraps stored digest bytes.
    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Compares with stored bytes in constant time (CRYPTO_memcmp).
    func matches(_ stored: [UInt8]) -> Bool {
        guard stored.count == self.bytes.count else { return false }
        return self.bytes.withUnsafeBytes { a in
            stored.withUnsafeBytes { b in
                CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0
            }
        }
    }
}

/// Random bytes from libcrypto's CSPRNG (`RAND_bytes`, seeded from the kernel), for tokens, secrets and keys.
enum CryptoRandom {
    /// `count` random bytes.
    static func bytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let ok = bytes.withUnsafeMutableBufferPointer { buffer in
            RAND_bytes(buffer.baseAddress, Int32(buffer.count))
        }
        if ok != 1 {
            // Never hand out a predictable credential: fall back to the system generator.
            var generator = SystemRandomNumberGenerator()
            for index in stride(from: 0, to: count, by: 8) {
                let word = generator.next() as UInt64
                for offset in 0..<min(8, count - index) {
                    bytes[index + offset] = UInt8(truncatingIfNeeded: word >> (8 * offset))
                }
            }
        }
        return bytes
    }
}
