public import NIOCore

/// How outgoing TLS connections are set up. Versions, suites and options are the same fixed defaults as the
/// server's; peer verification is always on.
public struct TLSClientConfiguration: Sendable, Hashable {
    /// Where the certificates that anchor verification come from.
    public enum TrustRoots: Sendable, Hashable {
        /// The operating system's store (`SSL_CTX_set_default_verify_paths`; Debian's `/etc/ssl/certs`).
        case system
        /// Only the CA certificates in this PEM file (a private CA, or a test CA).
        case certificateFile(String)
    }

    /// Trust anchors for the server's chain. Default `.system`.
    public var trustRoots: TrustRoots
    /// ALPN protocols offered, in order. Default `["h2", "http/1.1"]`; empty offers no ALPN.
    public var applicationProtocols: [String]
    /// A connection that has not completed its handshake after this long is closed. Default 10 seconds.
    public var handshakeTimeout: TimeAmount

    /// Creates a configuration.
    public init(
        trustRoots: TrustRoots = .system,
        applicationProtocols: [String] = ["h2", "http/1.1"],
        handshakeTimeout: TimeAmount = .seconds(10)
    ) {
        self.trustRoots = trustRoots
        self.applicationProtocols = applicationProtocols
        self.handshakeTimeout = handshakeTimeout
    }
}
