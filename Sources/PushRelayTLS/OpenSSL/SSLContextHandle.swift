import COpenSSL

/// Owns one configured `SSL_CTX`. It is never changed after `init`, and OpenSSL allows creating `SSL`s from a
/// configured `SSL_CTX` on any thread, so it is shared between event loops. Every `SSLConnection` keeps its
/// handle alive, which keeps the ALPN callback's user data alive for as long as any handshake may call it.
final class SSLContextHandle: @unchecked Sendable {
    /// TLS 1.2 suites: ECDHE key exchange (forward secrecy) with AEAD ciphers only. TLS 1.3 uses OpenSSL's
    /// default suites, which are all AEAD and forward-secret.
    static let tls12CipherList = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    ].joined(separator: ":")

    let pointer: OpaquePointer
    /// The served certificate (servers only).
    let certificate: TLSCertificateInfo?
    /// The subjects (RFC 2253) of the certificates served after the leaf: its intermediates (servers only).
    let chainSubjects: [String]
    /// Server ALPN preference, read by the select callback through `Unmanaged`.
    private let alpn: ALPNPreference

    private init(
        pointer: OpaquePointer, certificate: TLSCertificateInfo?, chainSubjects: [String] = [], alpn: ALPNPreference
    ) {
        self.pointer = pointer
        self.certificate = certificate
        self.chainSubjects = chainSubjects
        self.alpn = alpn
    }

    /// Whether the chain served carries the certificate of the leaf's issuer (true too for a self-issued leaf).
    var servesLeafIssuer: Bool {
        guard let certificate else { return true }
        return certificate.issuer == certificate.subject || self.chainSubjects.contains(certificate.issuer)
    }

    deinit {
        SSL_CTX_free(pointer)
    }

    /// A server context serving the PEM chain in `certificateChainFile` (leaf first) with the key in
    /// `privateKeyFile`. Refuses a key that does not match, and with `rejectingExpired` a certificate that is
    /// expired or not yet valid.
    static func server(
        certificateChainFile: String,
        privateKeyFile: String,
        applicationProtocols: [String],
        rejectingExpired: Bool
    ) throws(TLSError) -> (handle: SSLContextHandle, expired: Bool) {
        OpenSSLErrorQueue.clear()
        let alpn = try ALPNPreference(applicationProtocols)
        guard let ctx = SSL_CTX_new(TLS_server_method()) else {
            throw OpenSSLErrorQueue.error(.internalError, "SSL_CTX_new failed")
        }
        var owned = true
        defer { if owned { SSL_CTX_free(ctx) } }
        try configureCommon(ctx)
        // No session resumption: no tickets (TLS 1.2 and 1.3) and no server-side cache. See docs/tls.md.
        _ = SSL_CTX_set_options(ctx, pushrelay_SSL_OP_NO_TICKET())
        guard SSL_CTX_set_num_tickets(ctx, 0) == 1 else {
            throw OpenSSLErrorQueue.error(.internalError, "SSL_CTX_set_num_tickets failed")
        }
        _ = pushrelay_SSL_CTX_set_session_cache_mode_off(ctx)

        guard SSL_CTX_use_certificate_chain_file(ctx, certificateChainFile) == 1 else {
            throw OpenSSLErrorQueue.error(.certificateUnreadable, "cannot load certificate chain \(certificateChainFile)")
        }
        try usePrivateKey(ctx, file: privateKeyFile)
        guard let leaf = SSL_CTX_get0_certificate(ctx) else {
            throw OpenSSLErrorQueue.error(.certificateUnreadable, "no certificate in \(certificateChainFile)")
        }
        let info = certificateInfo(leaf)
        let expired = X509_cmp_current_time(X509_get0_notAfter(leaf)) < 0
        let notYetValid = X509_cmp_current_time(X509_get0_notBefore(leaf)) > 0
        if rejectingExpired && (expired || notYetValid) {
            throw TLSError(
                code: .certificateExpired,
                message: "certificate \(certificateChainFile) is not valid now (\(info.notValidBefore) to "
                    + "\(info.notValidAfter))"
            )
        }

        let chainSubjects = (0..<pushrelay_SSL_CTX_chain_count(ctx)).compactMap { index in
            pushrelay_SSL_CTX_chain_certificate(ctx, index).map { name(X509_get_subject_name($0)) }
        }
        let handle = SSLContextHandle(pointer: ctx, certificate: info, chainSubjects: chainSubjects, alpn: alpn)
        owned = false
        SSL_CTX_set_alpn_select_cb(ctx, alpnSelect, Unmanaged.passUnretained(handle.alpn).toOpaque())
        return (handle, expired || notYetValid)
    }

    /// A client context that verifies peers against `caFile`, or the system roots when it is `nil`, and offers
    /// `applicationProtocols` by ALPN.
    static func client(caFile: String?, applicationProtocols: [String]) throws(TLSError) -> SSLContextHandle {
        OpenSSLErrorQueue.clear()
        let alpn = try ALPNPreference(applicationProtocols)
        guard let ctx = SSL_CTX_new(TLS_client_method()) else {
            throw OpenSSLErrorQueue.error(.internalError, "SSL_CTX_new failed")
        }
        var owned = true
        defer { if owned { SSL_CTX_free(ctx) } }
        try configureCommon(ctx)
        _ = pushrelay_SSL_CTX_set_session_cache_mode_off(ctx)
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        if let caFile {
            guard SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1 else {
                throw OpenSSLErrorQueue.error(.trustRootsUnreadable, "cannot load CA file \(caFile)")
            }
        } else {
            guard SSL_CTX_set_default_verify_paths(ctx) == 1 else {
                throw OpenSSLErrorQueue.error(.trustRootsUnreadable, "cannot load the system trust roots")
            }
        }
        if !alpn.wire.isEmpty {
            // Returns 0 on success (unlike most of OpenSSL).
            let status = alpn.wire.withUnsafeBufferPointer { SSL_CTX_set_alpn_protos(ctx, $0.baseAddress, UInt32($0.count)) }
            guard status == 0 else { throw OpenSSLErrorQueue.error(.internalError, "SSL_CTX_set_alpn_protos failed") }
        }
        owned = false
        return SSLContextHandle(pointer: ctx, certificate: nil, alpn: alpn)
    }

    /// Protocol versions, suites and options shared by both sides.
    private static func configureCommon(_ ctx: OpaquePointer) throws(TLSError) {
        guard pushrelay_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1,
            pushrelay_SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) == 1
        else {
            throw OpenSSLErrorQueue.error(.internalError, "cannot restrict protocol versions")
        }
        guard SSL_CTX_set_cipher_list(ctx, tls12CipherList) == 1 else {
            throw OpenSSLErrorQueue.error(.internalError, "cannot set the TLS 1.2 cipher list")
        }
        _ = SSL_CTX_set_options(ctx, pushrelay_SSL_OP_NO_COMPRESSION() | pushrelay_SSL_OP_NO_RENEGOTIATION())
        // Idle connections (device streams) give their read/write buffers back.
        _ = pushrelay_SSL_CTX_set_mode(ctx, pushrelay_SSL_MODE_RELEASE_BUFFERS())
    }

    private static func usePrivateKey(_ ctx: OpaquePointer, file: String) throws(TLSError) {
        guard let bio = BIO_new_file(file, "r") else {
            throw OpenSSLErrorQueue.error(.privateKeyUnreadable, "cannot open private key \(file)")
        }
        defer { BIO_free(bio) }
        // A password callback that declines: an encrypted key fails here instead of prompting on a terminal.
        guard let key = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil) else {
            throw OpenSSLErrorQueue.error(.privateKeyUnreadable, "cannot read a PEM private key from \(file)")
        }
        defer { EVP_PKEY_free(key) }
        guard SSL_CTX_use_PrivateKey(ctx, key) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
            throw OpenSSLErrorQueue.error(.privateKeyMismatch, "private key \(file) does not match the certificate")
        }
    }

    private static func certificateInfo(_ x509: OpaquePointer) -> TLSCertificateInfo {
        TLSCertificateInfo(
            subject: name(X509_get_subject_name(x509)),
            issuer: name(X509_get_issuer_name(x509)),
            serialNumber: serial(X509_get_serialNumber(x509)),
            notValidBefore: time(X509_get0_notBefore(x509)),
            notValidAfter: time(X509_get0_notAfter(x509))
        )
    }

    private static func name(_ name: OpaquePointer?) -> String {
        withMemoryBIO { bio in _ = X509_NAME_print_ex(bio, name, 0, pushrelay_XN_FLAG_RFC2253()) }
    }

    private static func time(_ time: UnsafePointer<ASN1_TIME>?) -> String {
        withMemoryBIO { bio in _ = ASN1_TIME_print(bio, time) }
    }

    private static func serial(_ serial: UnsafePointer<ASN1_INTEGER>?) -> String {
        guard let bignum = ASN1_INTEGER_to_BN(serial, nil) else { return "?" }
        defer { BN_free(bignum) }
        guard let hex = BN_bn2hex(bignum) else { return "?" }
        defer { CRYPTO_free(hex, nil, 0) }
        return String(cString: hex)
    }

    /// Runs `body` with a fresh memory BIO and returns what it printed into it.
    private static func withMemoryBIO(_ body: (OpaquePointer) -> Void) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "?" }
        defer { BIO_free(bio) }
        body(bio)
        let count = Int(pushrelay_BIO_pending(bio))
        guard count > 0 else { return "" }
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32(count)) }
        return String(decoding: bytes.prefix(max(Int(read), 0)), as: UTF8.self)
    }
}

/// The protocols a side offers (client) or accepts in order of preference (server), with their wire form.
final class ALPNPreference: Sendable {
    let protocols: [[UInt8]]
    /// Length-prefixed concatenation, as `SSL_CTX_set_alpn_protos` takes it.
    let wire: [UInt8]

    init(_ names: [String]) throws(TLSError) {
        var protocols: [[UInt8]] = []
        for name in names {
            let bytes = Array(name.utf8)
            guard !bytes.isEmpty, bytes.count <= 255 else {
                throw TLSError(code: .invalidConfiguration, message: "ALPN protocol name must be 1...255 bytes: \(name)")
            }
            protocols.append(bytes)
        }
        self.protocols = protocols
        self.wire = protocols.flatMap { [UInt8($0.count)] + $0 }
    }

    /// The first of our protocols that the client offered, as an (offset, length) into `offered`.
    func select(from offered: UnsafeBufferPointer<UInt8>) -> (offset: Int, length: Int)? {
        var offers: [(offset: Int, length: Int)] = []
        var index = 0
        while index < offered.count {
            let length = Int(offered[index])
            guard length > 0, index + 1 + length <= offered.count else { return nil }
            offers.append((index + 1, length))
            index += 1 + length
        }
        for candidate in protocols {
            for offer in offers where offer.length == candidate.count {
                if UnsafeBufferPointer(rebasing: offered[offer.offset..<offer.offset + offer.length])
                    .elementsEqual(candidate)
                {
                    return offer
                }
            }
        }
        return nil
    }
}

/// `SSL_CTX_alpn_select_cb_func`: server preference among the client's offers; no overlap means no ALPN (the
/// connection proceeds and speaks HTTP/1.1).
private func alpnSelect(
    _ ssl: OpaquePointer?,
    _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
    _ outLength: UnsafeMutablePointer<UInt8>?,
    _ offered: UnsafePointer<UInt8>?,
    _ offeredLength: UInt32,
    _ userData: UnsafeMutableRawPointer?
) -> Int32 {
    guard let userData, let offered, let out, let outLength else { return SSL_TLSEXT_ERR_NOACK }
    let preference = Unmanaged<ALPNPreference>.fromOpaque(userData).takeUnretainedValue()
    let offers = UnsafeBufferPointer(start: offered, count: Int(offeredLength))
    guard let chosen = preference.select(from: offers) else { return SSL_TLSEXT_ERR_NOACK }
    // Points into the client's list, which OpenSSL copies after the callback returns.
    out.pointee = offered + chosen.offset
    outLength.pointee = UInt8(chosen.length)
    return SSL_TLSEXT_ERR_OK
}
