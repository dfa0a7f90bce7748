import Logging
import PushRelayTLS

/// The CLI's TLS for `https://` servers (`register`, `send`, `listen`): OpenSSL (PushRelayTLS) with ALPN, trusting
/// the system's roots or, with `--ca-file`, only that file's certificates.
enum CLITLS {
    static func context(caFile: String?, applicationProtocols: [String], logger: Logger) throws -> TLSClientContext {
        try TLSClientContext(
            configuration: TLSClientConfiguration(
                trustRoots: caFile.map { .certificateFile($0) } ?? .system, applicationProtocols: applicationProtocols),
            logger: logger)
    }
}
