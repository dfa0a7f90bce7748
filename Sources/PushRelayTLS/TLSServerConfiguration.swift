public import NIOCore

/// How a TLS listener is set up. The protocol versions (TLS 1.2 and 1.3), cipher suites and options are fixed
/// safe defaults (docs/tls.md) and deliberately not configurable.
public struct TLSServerConfiguration: Sendable, Hashable {
    /// PEM file with the server certificate first, then any intermediates (Let's Encrypt's `fullchain.pem`).
    public var certificateChainFile: String
    /// PEM file with the private key of the first certificate (`privkey.pem`).
    public var privateKeyFile: String
    /// ALPN protocols accepted, in the server's order of preference. A client offering none of them still
    /// connects, without ALPN (and then speaks HTTP/1.1). Default `["h2", "http/1.1"]`.
    public var applicationProtocols: [String]
    /// A connection that has not completed its handshake after this long is closed. Default 10 seconds.
    public var handshakeTimeout: TimeAmount

    /// Creates a configuration; only the two files are required.
    public init(
        certificateChainFile: String,
        privateKeyFile: String,
        applicationProtocols: [String] = ["h2", "http/1.1"],
        handshakeTimeout: TimeAmount = .seconds(10)
    ) {
        self.certificateChainFile = certificateChainFile
        self.privateKeyFile = privateKeyFile
        self.applicationProtocols = applicationProtocols
        self.handshakeTimeout = handshakeTimeout
    }
}
