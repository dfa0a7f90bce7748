import ArgumentParser
import Foundation
import HTTPTypes
import Logging
import NIOCore
import PushRelayHTTP
import PushRelayTLS

/// One request from the command line to a relay over HTTP/2: h2c with prior knowledge for `http://`, TLS with
/// ALPN `h2` for `https://` (trusting the system roots, or only `caFile`).
struct RelayHTTPCall {
    /// The response: status and the whole body as text.
    struct Answer {
        var status: Int
        var headerFields: HTTPFields
        var body: String
    }

    let server: URL
    var caFile: String?

    /// Checks that `server` is an `http://` or `https://` URL with a host.
    static func validate(server: String) throws {
        guard let url = URL(string: server), let scheme = url.scheme?.lowercased(), url.host != nil,
            scheme == "http" || scheme == "https"
        else {
            throw ValidationError("--server must be a URL like http://host:port or https://host")
        }
    }

    /// Sends `method path` with `headerFields` and `body`, and reads the whole response (at most 16 MiB).
    func perform(_ method: HTTPRequest.Method, path: String, headerFields: HTTPFields, body: [UInt8]?) async throws
        -> Answer
    {
        let scheme = server.scheme?.lowercased() ?? "http"
        let host = server.host ?? "127.0.0.1"
        let port = server.port ?? (scheme == "https" ? 443 : 80)
        var logger = Logger(label: "pushrelay.cli")
        logger.logLevel = .warning
        var configuration = HTTP2Client.Configuration()
        if scheme == "https" {
            let context = try CLITLS.context(caFile: caFile, applicationProtocols: ["h2"], logger: logger)
            configuration.tlsHandlerFactory = { context.makeHandler(serverHostname: host) }
        }
        let client = try await HTTP2Client.connect(host: host, port: port, configuration: configuration, logger: logger)
        do {
            let prefix = server.path.hasSuffix("/") ? String(server.path.dropLast()) : server.path
            let request = HTTPRequest(method: method, scheme: nil, authority: nil, path: prefix + path,
                                      headerFields: headerFields)
            let response = try await client.execute(request, body: body.map { ByteBuffer(bytes: $0) })
            let bytes = try await response.body.collect(upTo: 16 << 20)
            await client.close()
            return Answer(
                status: response.head.status.code, headerFields: response.head.headerFields,
                body: String(buffer: bytes))
        } catch {
            await client.close()
            throw error
        }
    }
}

/// Writes text to standard error.
func printToStandardError(_ text: String) {
    FileHandle.standardError.write(Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
}
