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
                var size: UInt32 = 0
                if let sha256 = Self.sha256,
                    EVP_Digest(input.baseAddress, input.count, output.baseAddress, &size, sha256, nil) == 1
                {
                    return
                }
                _ = SHA256(input.baseAddress, input.count, output.baseAddress)
            }
        }
        self.bytes = digest
    }

    /// SHA-256 fetched from the default provider once. OpenSSL 3's one-shot `SHA256()` looks the algorithm up by
    /// name on every call (a provider query under a lock), which was about half of its cost; every send hashes its
    /// server key and every acknowledgement its device secret. `nonisolated(unsafe)`: set once, then only read, and
    /// a fetched `EVP_MD` may be used from any thread.
    nonisolated(unsafe) private static let sha256: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil)

    /// Wraps stored digest bytes.
    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The digest's bytes in one piece: the synthesized hash combined the array's 32 bytes one call at a time
    /// (≈ 1,200 instructions for each look-up by digest: a send's server key, an acknowledgement's secret).
    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
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

