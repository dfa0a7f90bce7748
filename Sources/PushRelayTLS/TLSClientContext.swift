public import Logging
public import NIOCore

/// The TLS side of outgoing connections: verifies the server's chain and host name, offers ALPN.
/// Create one per configuration and share it; it makes one handler per connection.
public final class TLSClientContext: Sendable {
    private let configuration: TLSClientConfiguration
    private let handle: SSLContextHandle
    private let logger: Logger

    /// Loads the trust roots. Throws a `TLSError` when the CA file cannot be read or an ALPN name is invalid.
    public init(configuration: TLSClientConfiguration = TLSClientConfiguration(), logger: Logger) throws(TLSError) {
        self.configuration = configuration
        self.logger = logger
        let caFile: String? =
            switch configuration.trustRoots {
            case .system: nil
            case .certificateFile(let path): path
            }
        self.handle = try SSLContextHandle.client(caFile: caFile, applicationProtocols: configuration.applicationProtocols)
    }

    /// A new TLS handler for a connection to `serverHostname`, to be placed first in its pipeline.
    ///
    /// `serverHostname` is sent as SNI and must match the certificate (DNS name, or an IP address literal,
    /// which is then checked against the certificate's IP addresses and not sent as SNI). The handler starts
    /// the handshake when the channel becomes active, fires `TLSHandshakeCompleted` (read `applicationProtocol`
    /// to choose HTTP/2 or HTTP/1.1), and reports a failed handshake as a `TLSError` through `errorCaught`
    /// (code `certificateVerificationFailed` for an untrusted chain or a wrong host name), then closes.
    /// A host name OpenSSL refuses (e.g. one with a NUL byte) is reported the same way, with code
    /// `invalidConfiguration`, when the channel becomes active.
    public func makeHandler(serverHostname: String) -> any ChannelHandler {
        var logger = self.logger
        logger[metadataKey: "tls.server"] = "\(serverHostname)"
        do {
            let connection = try SSLConnection(client: handle, serverHostname: serverHostname)
            return TLSHandler(
                connection: connection,
                role: .client,
                handshakeTimeout: configuration.handshakeTimeout,
                logger: logger
            )
        } catch {
            return FailedTLSHandler(error: error, logger: logger)
        }
    }
}
