import COpenSSL

// The only file of this module that holds libcrypto pointers: RSA key generation, PEM import and export,
// RS256 (RSASSA-PKCS1-v1_5 with SHA-256) signing and verification. Every allocation is freed in a `defer` or in the
// owner's `deinit`; nothing above this file sees an `UnsafePointer`.

/// An RSA public key (SubjectPublicKeyInfo), what the relay keeps of a service-account key: it verifies RS256
/// signatures of the JWTs that senders present at `/token`.
public final class RSAPublicKey: @unchecked Sendable {
    // Immutable after init; libcrypto's verification reads the key without changing it (thread-safe in OpenSSL 3).
    private let key: OpaquePointer

    /// Reads a `-----BEGIN PUBLIC KEY-----` PEM. Throws ``CryptoError/Code/invalidKey`` for anything else and
    /// ``CryptoError/Code/unsupportedKey`` for a key that is not RSA of at least 2048 bits.
    public init(pem: String) throws(CryptoError) {
        self.key = try OpenSSLFailure.readRSA2048(pem, "not a PEM public key") { PEM_read_bio_PUBKEY($0, nil, nil, nil) }
    }

    deinit { EVP_PKEY_free(key) }

    /// The key as a `-----BEGIN PUBLIC KEY-----` PEM.
    public var pem: String {
        OpenSSLFailure.writePEM { bio in PEM_write_bio_PUBKEY(bio, key) }
    }

    /// Whether `signature` is a valid RS256 signature of `message` by this key.
    public func verifyRS256(signature: [UInt8], message: [UInt8]) -> Bool {
        ERR_clear_error()
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            ERR_clear_error()
            return false
        }
        let result = signature.withUnsafeBufferPointer { signatureBytes in
            message.withUnsafeBufferPointer { messageBytes in
                EVP_DigestVerify(
                    context, signatureBytes.baseAddress, signatureBytes.count, messageBytes.baseAddress,
                    messageBytes.count)
            }
        }
        ERR_clear_error()
        return result == 1
    }
}

/// An RSA private key: generated for a new service account (only its PKCS#8 PEM leaves the process, in the
/// service-account file) or read from such a file to sign a JWT (`pushrelay send --v1`, tests).
public final class RSAPrivateKey: @unchecked Sendable {
    // Immutable after init; signing does not change the key.
    private let key: OpaquePointer

    /// A new RSA-2048 key (public exponent 65537) from libcrypto's CSPRNG.
    public static func generate(bits: Int = 2048) throws(CryptoError) -> RSAPrivateKey {
        ERR_clear_error()
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, nil) else {
            throw OpenSSLFailure.error(.library, "EVP_PKEY_CTX_new_id failed")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) == 1 else {
            throw OpenSSLFailure.error(.library, "RSA key generation setup failed")
        }
        var key: OpaquePointer? = nil
        guard EVP_PKEY_generate(context, &key) == 1, let key else {
            throw OpenSSLFailure.error(.library, "RSA key generation failed")
        }
        return RSAPrivateKey(owning: key)
    }

    /// Reads a private key PEM (`-----BEGIN PRIVATE KEY-----`, PKCS#8, as in a service-account file; the older
    /// `BEGIN RSA PRIVATE KEY` form is read too). Throws for anything that is not an RSA key of at least 2048 bits.
    public init(pem: String) throws(CryptoError) {
        self.key = try OpenSSLFailure.readRSA2048(pem, "not a PEM private key") { PEM_read_bio_PrivateKey($0, nil, nil, nil) }
    }

    private init(owning key: OpaquePointer) { self.key = key }

    deinit { EVP_PKEY_free(key) }

    /// The key as an unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), the `private_key` of a
    /// service-account file.
    public var pkcs8PEM: String {
        OpenSSLFailure.writePEM { bio in PEM_write_bio_PKCS8PrivateKey(bio, key, nil, nil, 0, nil, nil) }
    }

    /// The public half.
    public var publicKey: RSAPublicKey {
        get throws(CryptoError) { try RSAPublicKey(pem: OpenSSLFailure.writePEM { PEM_write_bio_PUBKEY($0, key) }) }
    }

    /// The RS256 signature of `message`.
    public func signRS256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        ERR_clear_error()
        guard let context = EVP_MD_CTX_new() else { throw OpenSSLFailure.error(.library, "EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            throw OpenSSLFailure.error(.library, "EVP_DigestSignInit failed")
        }
        var length = 0
        var signature = [UInt8](repeating: 0, count: Int(EVP_PKEY_get_size(key)))
        let result = message.withUnsafeBufferPointer { messageBytes in
            signature.withUnsafeMutableBufferPointer { output in
                length = output.count
                return EVP_DigestSign(context, output.baseAddress, &length, messageBytes.baseAddress, messageBytes.count)
            }
        }
        guard result == 1 else { throw OpenSSLFailure.error(.library, "EVP_DigestSign failed") }
        return Array(signature.prefix(length))
    }
}

/// libcrypto's error queue, PEM input and output, shared by both key types.
private enum OpenSSLFailure {
    /// Reads a key with a `PEM_read_bio_*` call; throws unless it is an RSA key of at least 2048 bits.
    static func readRSA2048(
        _ pem: String, _ what: String, _ read: (OpaquePointer) -> OpaquePointer?
    ) throws(CryptoError) -> OpaquePointer {
        ERR_clear_error()
        guard let key = try withMemoryBIO(pem, read) else { throw error(.invalidKey, what) }
        do {
            try checkRSA2048(key)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        return key
    }

    static func withMemoryBIO<T>(_ text: String, _ body: (OpaquePointer) -> T) throws(CryptoError) -> T {
        var bytes = Array(text.utf8)
        bytes.append(0)
        let result: T? = bytes.withUnsafeBufferPointer { buffer -> T? in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count - 1)) else { return nil }
            defer { BIO_free(bio) }
            return body(bio)
        }
        guard let result else { throw OpenSSLFailure.error(.library, "BIO_new_mem_buf failed") }
        return result
    }

    static func checkRSA2048(_ key: OpaquePointer) throws(CryptoError) {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
            throw CryptoError(code: .unsupportedKey, message: "the key is not an RSA key")
        }
        guard EVP_PKEY_get_bits(key) >= 2048 else {
            throw CryptoError(code: .unsupportedKey, message: "the RSA key has fewer than 2048 bits")
        }
    }

    /// A ``CryptoError`` with `context` and the strings of this thread's error queue (which it empties).
    static func error(_ code: CryptoError.Code, _ context: String) -> CryptoError {
        var reasons: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while case let code = ERR_get_error(), code != 0 {
            buffer.withUnsafeMutableBufferPointer { ERR_error_string_n(code, $0.baseAddress, $0.count) }
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return CryptoError(code: code, message: reasons.isEmpty ? context : "\(context): \(reasons.joined(separator: "; "))")
    }

    /// Runs a `PEM_write_bio_*` call into a memory BIO and returns the text ("" if libcrypto failed, which only
    /// an allocation failure can cause for a key it holds).
    static func writePEM(_ write: (OpaquePointer) -> Int32) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else {
            ERR_clear_error()
            return ""
        }
        let count = Int(pushrelay_BIO_pending(bio))
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32(count)) }
        return String(decoding: bytes.prefix(Int(max(read, 0))), as: UTF8.self)
    }
}
