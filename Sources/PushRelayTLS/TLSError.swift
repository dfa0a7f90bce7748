/// An error of the TLS layer: loading certificates, the handshake, or the record layer.
///
/// `code` says what kind of failure it was; `message` carries OpenSSL's reason (never key material).
public struct TLSError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of TLS failure. New codes may be added; switch with a `default`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case invalidConfiguration
            case certificateUnreadable
            case privateKeyUnreadable
            case privateKeyMismatch
            case certificateExpired
            case trustRootsUnreadable
            case handshakeFailed
            case certificateVerificationFailed
            case certificateRefusedByPeer
            case handshakeTimeout
            case closedDuringHandshake
            case protocolError
            case internalError
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A configuration value is not usable (e.g. an empty or over-long ALPN protocol name).
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The certificate (chain) file could not be read or parsed as PEM.
        public static let certificateUnreadable = Code(.certificateUnreadable)
        /// The private key file could not be read or parsed as PEM.
        public static let privateKeyUnreadable = Code(.privateKeyUnreadable)
        /// The private key does not belong to the certificate.
        public static let privateKeyMismatch = Code(.privateKeyMismatch)
        /// The certificate is expired or not yet valid.
        public static let certificateExpired = Code(.certificateExpired)
        /// The CA file for verifying peers could not be read.
        public static let trustRootsUnreadable = Code(.trustRootsUnreadable)
        /// The handshake failed (no common protocol version or cipher, malformed messages, a plaintext peer, …).
        public static let handshakeFailed = Code(.handshakeFailed)
        /// The peer's certificate chain or host name did not verify.
        public static let certificateVerificationFailed = Code(.certificateVerificationFailed)
        /// The peer refused our certificate with an alert (`unknown_ca`, `certificate_expired`, `bad_certificate`,
        /// …): an incomplete chain, an expired or wrong certificate on this side.
        public static let certificateRefusedByPeer = Code(.certificateRefusedByPeer)
        /// The handshake did not complete within the configured time.
        public static let handshakeTimeout = Code(.handshakeTimeout)
        /// The peer closed the connection before the handshake completed.
        public static let closedDuringHandshake = Code(.closedDuringHandshake)
        /// The peer violated the TLS record protocol after the handshake (bad MAC, unexpected message, …).
        public static let protocolError = Code(.protocolError)
        /// OpenSSL failed in a way that is not the peer's fault (allocation, …).
        public static let internalError = Code(.internalError)

        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// A human-readable reason, including OpenSSL's error string where there is one.
    public var message: String

    /// Creates an error with a code and a reason.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "TLSError.\(code): \(message)" }
}

extension TLSError {
    /// A short label for a failed handshake, for metrics: `timeout`, `eof` (closed by the peer), `certificate`
    /// (verification here, or the peer refusing our certificate), `protocol` (everything else the peer got wrong: versions, ciphers, garbage), `internal`.
    public var handshakeFailureReason: String {
        switch code {
        case .handshakeTimeout: "timeout"
        case .closedDuringHandshake: "eof"
        case .certificateVerificationFailed, .certificateExpired, .certificateRefusedByPeer: "certificate"
        case .internalError, .invalidConfiguration: "internal"
        default: "protocol"
        }
    }
}
