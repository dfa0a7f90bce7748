import HTTPTypes
import Logging
import NIOCore
import PushRelayTLS
import Testing

@testable import PushRelayHTTP

/// A pass-through "TLS" handler: counts connections and, like the real one, reports a completed handshake with an
/// ALPN result once the connection is active.
final class FakeTLSHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    let alpn: String?

    init(alpn: String?) { self.alpn = alpn }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        context.fireUserInboundEventTriggered(TLSHandshakeCompleted(applicationProtocol: alpn, protocolVersion: "fake"))
    }
}

/// The TLS seam of server and client: a handler factory placed first in the pipeline.
@Suite struct TLSSeamTests {
    @Test func serverAndClientRunThroughTheSeamHandler() async throws {
        let server = HTTPServer(
            listeners: [.init(host: "127.0.0.1", port: 0, tlsHandlerFactory: { FakeTLSHandler(alpn: "h2") })],
            responder: TestServer.makeRouter(probe: TestRouteProbe()),
            logger: .init(label: "test"))
        let port = try await server.start()[0].port!
        var configuration = HTTP2Client.Configuration()
        configuration.tlsHandlerFactory = { FakeTLSHandler(alpn: "h2") }
        let client = try await HTTP2Client.connect(host: "127.0.0.1", port: port, configuration: configuration)
        let response = try await client.execute(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/healthz"))
        #expect(response.head.status == .ok)
        #expect(String(buffer: try await response.body.collect(upTo: 100)) == #"{"status":"ok"}"#)
        await client.close()
        await server.shutdown()
    }

    @Test func clientRefusesAnALPNOtherThanH2() async throws {
        let server = HTTPServer(
            listeners: [.init(host: "127.0.0.1", port: 0)],
            responder: TestServer.makeRouter(probe: TestRouteProbe()),
            logger: .init(label: "test"))
        let port = try await server.start()[0].port!
        var configuration = HTTP2Client.Configuration()
        configuration.tlsHandlerFactory = { FakeTLSHandler(alpn: "http/1.1") }
        await #expect(throws: HTTPTransportError.self) {
            _ = try await HTTP2Client.connect(host: "127.0.0.1", port: port, configuration: configuration)
        }
        await server.shutdown()
    }
}
