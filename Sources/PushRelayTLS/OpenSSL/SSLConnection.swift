import COpenSSL
import NIOCore

/// One TLS connection: an `SSL` between two memory BIOs. Ciphertext from the socket goes into `readBIO`
/// (`feed`); what OpenSSL wants to send piles up in `writeBIO` and is taken out with `takeCiphertext` after every
/// handshake, read, write and shutdown step. Used only on its channel's event loop.
///
/// Ownership: `SSL_set_bio` hands both BIOs to the `SSL`, and `SSL_free` in `deinit` frees all three. The
/// `SSL` holds a reference on its `SSL_CTX`; `context` keeps the Swift side of that context (ALPN user data) alive.
final class SSLConnection {
    /// Outcome of one handshake step.
    enum HandshakeResult {
        /// Done; plaintext may flow.
        case complete
        /// OpenSSL needs more bytes from the peer.
        case needsMoreData
        /// Fatal; OpenSSL may have queued an alert in the write BIO.
        case failed(TLSError)
    }

    /// Outcome of draining plaintext.
    enum ReadResult {
        /// Every decryptable byte was read; more ciphertext is needed.
        case needsMoreData
        /// The peer sent close_notify.
        case closeNotify
        /// Fatal record-layer error.
        case failed(TLSError)
    }

    private let context: SSLContextHandle
    private let ssl: OpaquePointer
    private let readBIO: OpaquePointer
    private let writeBIO: OpaquePointer

    /// A server-side connection.
    init(server context: SSLContextHandle) throws(TLSError) {
        self.context = context
        (ssl, readBIO, writeBIO) = try Self.makeSSL(context)
        SSL_set_accept_state(ssl)
    }

    /// A client-side connection to `serverHostname` (a DNS name for SNI and name checks, or an IP literal).
    init(client context: SSLContextHandle, serverHostname: String) throws(TLSError) {
        self.context = context
        (ssl, readBIO, writeBIO) = try Self.makeSSL(context)
        SSL_set_connect_state(ssl)
        if Self.isIPAddress(serverHostname) {
            // SNI must not carry an IP address (RFC 6066 §3); verify the address against the certificate's SAN.
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverHostname) == 1 else {
                throw OpenSSLErrorQueue.error(.invalidConfiguration, "bad IP address \(serverHostname)")
            }
        } else {
            guard pushrelay_SSL_set_tlsext_host_name(ssl, serverHostname) == 1,
                SSL_set1_host(ssl, serverHostname) == 1
            else {
                throw OpenSSLErrorQueue.error(.invalidConfiguration, "bad server host name \(serverHostname)")
            }
        }
    }

    deinit {
        SSL_free(ssl)
    }

    private static func makeSSL(
        _ context: SSLContextHandle
    ) throws(TLSError) -> (OpaquePointer, OpaquePointer, OpaquePointer) {
        OpenSSLErrorQueue.clear()
        guard let ssl = SSL_new(context.pointer) else {
            throw OpenSSLErrorQueue.error(.internalError, "SSL_new failed")
        }
        guard let readBIO = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw OpenSSLErrorQueue.error(.internalError, "BIO_new failed")
        }
        guard let writeBIO = BIO_new(BIO_s_mem()) else {
            BIO_free(readBIO)
            SSL_free(ssl)
            throw OpenSSLErrorQueue.error(.internalError, "BIO_new failed")
        }
        SSL_set_bio(ssl, readBIO, writeBIO)
        return (ssl, readBIO, writeBIO)
    }

    private static func isIPAddress(_ host: String) -> Bool {
        if host.contains(":") { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil }
    }

    /// Hands ciphertext from the socket to OpenSSL. A memory BIO grows as needed, so it takes everything.
    func feed(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let chunk = min(bytes.count - offset, Int(Int32.max))
                let written = BIO_write(readBIO, bytes.baseAddress! + offset, Int32(chunk))
                guard written > 0 else { return }
                offset += Int(written)
            }
        }
    }

    /// Advances the handshake with what has been fed so far.
    func handshake() -> HandshakeResult {
        OpenSSLErrorQueue.clear()
        let status = SSL_do_handshake(ssl)
        if status == 1 { return .complete }
        let error = SSL_get_error(ssl, status)
        switch error {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .needsMoreData
        default:
            return .failed(handshakeError(sslError: error))
        }
    }

    /// OpenSSL's reasons for the alerts a peer sends when it refuses the certificate it was shown.
    private static let certificateAlerts: Set<Int32> = [
        SSL_R_SSLV3_ALERT_BAD_CERTIFICATE, SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE, SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED,
        SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED, SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN, SSL_R_TLSV1_ALERT_UNKNOWN_CA,
    ]

    private func handshakeError(sslError: Int32) -> TLSError {
        let verifyResult = SSL_get_verify_result(ssl)
        if verifyResult != X509_V_OK {
            let reason = String(cString: X509_verify_cert_error_string(verifyResult))
            _ = OpenSSLErrorQueue.drain()
            return TLSError(code: .certificateVerificationFailed, message: "certificate verification failed: \(reason)")
        }
        if sslError == SSL_ERROR_ZERO_RETURN {
            _ = OpenSSLErrorQueue.drain()
            return TLSError(code: .closedDuringHandshake, message: "peer closed the connection during the handshake")
        }
        if Self.certificateAlerts.contains(pushrelay_ERR_peek_reason()) {
            return OpenSSLErrorQueue.error(.certificateRefusedByPeer, "the peer refused our certificate")
        }
        return OpenSSLErrorQueue.error(.handshakeFailed, "handshake failed")
    }

    /// Decrypts everything available into `buffer`.
    func readPlaintext(into buffer: inout ByteBuffer) -> ReadResult {
        while true {
            OpenSSLErrorQueue.clear()
            var status: Int32 = 0
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 16_384) { bytes in
                status = SSL_read(ssl, bytes.baseAddress, Int32(clamping: bytes.count))
                return max(Int(status), 0)
            }
            if status > 0 { continue }
            switch SSL_get_error(ssl, status) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return .needsMoreData
            case SSL_ERROR_ZERO_RETURN:
                return .closeNotify
            default:
                return .failed(OpenSSLErrorQueue.error(.protocolError, "TLS read failed"))
            }
        }
    }

    /// Encrypts all of `buffer` (one or more records) into the write BIO.
    func writePlaintext(_ buffer: ByteBuffer) -> TLSError? {
        buffer.withUnsafeReadableBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                OpenSSLErrorQueue.clear()
                let chunk = min(bytes.count - offset, Int(Int32.max))
                let status = SSL_write(ssl, bytes.baseAddress! + offset, Int32(chunk))
                guard status > 0 else {
                    return OpenSSLErrorQueue.error(.protocolError, "TLS write failed")
                }
                offset += Int(status)
            }
            return nil
        }
    }

    /// Queues our close_notify alert.
    func shutdown() {
        OpenSSLErrorQueue.clear()
        _ = SSL_shutdown(ssl)
        OpenSSLErrorQueue.clear()
    }

    /// Whatever OpenSSL wants sent (handshake messages, records, alerts), or `nil`.
    func takeCiphertext(allocator: ByteBufferAllocator) -> ByteBuffer? {
        let pending = Int(pushrelay_BIO_pending(writeBIO))
        guard pending > 0 else { return nil }
        var buffer = allocator.buffer(capacity: pending)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: pending) { bytes in
            Int(max(BIO_read(writeBIO, bytes.baseAddress, Int32(pending)), 0))
        }
        return buffer
    }

    /// The ALPN result, if any.
    var applicationProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// `"TLSv1.3"`, `"TLSv1.2"`.
    var protocolVersion: String {
        String(cString: SSL_get_version(ssl))
    }

    /// The negotiated cipher suite's OpenSSL name.
    var cipherName: String {
        guard let cipher = SSL_get_current_cipher(ssl) else { return "none" }
        return String(cString: SSL_CIPHER_get_name(cipher))
    }
}
