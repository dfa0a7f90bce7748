public import Logging
public import NIOCore
import NIOConcurrencyHelpers

/// The TLS side of a listener: holds the current certificate and makes one handler per accepted connection.
///
/// The current `SSL_CTX` is swapped atomically by `reload()`: handshakes that start afterwards use the new
/// certificate; connections already open keep the one they were made with (each holds its own reference).
/// Share one context between all event loops of a listener.
public final class TLSServerContext: Sendable {
    /// The files served (a reload may name others) and the ALPN names.
    private let configuration: NIOLockedValueBox<TLSServerConfiguration>
    /// The configuration's handshake timeout (a reload changes files only), read per connection without the lock.
    private let handshakeTimeout: TimeAmount
    private let logger: Logger
    private let current: NIOLockedValueBox<SSLContextHandle>

    /// Loads the certificate chain and key named in `configuration`.
    ///
    /// Throws a `TLSError` when a file cannot be read, the key does not match the certificate, or an ALPN name
    /// is invalid. An expired (or not yet valid) certificate is accepted at start with a warning, so that a lapsed
    /// renewal does not keep the daemon down; `reload()` refuses one.
    public init(configuration: TLSServerConfiguration, logger: Logger) throws(TLSError) {
        self.configuration = NIOLockedValueBox(configuration)
        self.handshakeTimeout = configuration.handshakeTimeout
        self.logger = logger
        let (handle, invalidNow) = try SSLContextHandle.server(
            certificateChainFile: configuration.certificateChainFile,
            privateKeyFile: configuration.privateKeyFile,
            applicationProtocols: configuration.applicationProtocols,
            rejectingExpired: false
        )
        self.current = NIOLockedValueBox(handle)
        let info = handle.certificate.map { "\($0)" } ?? "?"
        if invalidNow {
            logger.warning("TLS certificate is expired or not yet valid", metadata: ["tls.certificate": "\(info)"])
        } else {
            logger.info("TLS certificate loaded", metadata: ["tls.certificate": "\(info)"])
        }
    }

    /// The certificate new handshakes are served.
    public var certificate: TLSCertificateInfo {
        current.withLockedValue { $0.certificate! }
    }

    /// Reads the certificate and key files again — those named here, else the ones in use — and, if they are good,
    /// serves them to every new handshake (and reads them on the next reload).
    ///
    /// Open connections are not touched. On failure (unreadable file, key not matching, certificate expired or
    /// not yet valid, or — when the chain in use serves intermediates — a leaf without its issuer's certificate,
    /// as a chain file cut after the leaf is) the error is logged and thrown, and the certificate and files in use stay. Safe from any
    /// thread; the daemon calls it on SIGHUP with the paths its configuration names now.
    @discardableResult
    public func reload(certificateChainFile: String? = nil, privateKeyFile: String? = nil) throws(TLSError)
        -> TLSCertificateInfo
    {
        var next = configuration.withLockedValue { $0 }
        if let certificateChainFile { next.certificateChainFile = certificateChainFile }
        if let privateKeyFile { next.privateKeyFile = privateKeyFile }
        let handle: SSLContextHandle
        do throws(TLSError) {
            handle = try SSLContextHandle.server(
                certificateChainFile: next.certificateChainFile,
                privateKeyFile: next.privateKeyFile,
                applicationProtocols: next.applicationProtocols,
                rejectingExpired: true
            ).handle
            // A chain file cut after the leaf (a renewal written half-way, `cert.pem` named for `fullchain.pem`)
            // loads fine and then fails every client that does not hold the intermediate itself. The chain in use
            // tells whether this deployment serves intermediates: if it does, a new leaf served without its
            // issuer is refused.
            let served = current.withLockedValue { $0 }
            if !served.chainSubjects.isEmpty, !handle.servesLeafIssuer, let leaf = handle.certificate {
                throw TLSError(
                    code: .certificateUnreadable,
                    message: "certificate chain \(next.certificateChainFile) has no certificate for the leaf's issuer "
                        + "\(leaf.issuer), where the chain in use serves intermediates: is the file cut after the "
                        + "leaf? Serve the leaf followed by its intermediates (fullchain.pem)"
                )
            }
        } catch {
            logger.error(
                "TLS certificate reload refused; still serving the previous certificate",
                metadata: ["tls.error.code": "\(error.code)", "tls.error": "\(error.message)"]
            )
            throw error
        }
        current.withLockedValue { $0 = handle }
        configuration.withLockedValue { $0 = next }
        let info = handle.certificate!
        logger.info("TLS certificate reloaded", metadata: ["tls.certificate": "\(info)"])
        return info
    }

    /// A new TLS handler for one accepted connection, to be placed first in its pipeline.
    ///
    /// Call it on the connection's event loop (in the child channel initializer). If OpenSSL cannot even
    /// allocate the connection the handler closes the channel at once and logs why.
    public func makeHandler() -> any ChannelHandler {
        let handle = current.withLockedValue { $0 }
        do {
            let connection = try SSLConnection(server: handle)
            return TLSHandler(
                connection: connection,
                role: .server,
                handshakeTimeout: handshakeTimeout,
                logger: logger
            )
        } catch {
            return FailedTLSHandler(error: error, logger: logger)
        }
    }
}
