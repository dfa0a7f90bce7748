import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import PushRelayHTTP

/// The connection handlers in an `EmbeddedChannel`, without sockets.
@Suite struct HTTPConnectionHandlerTests {
    static func shared(_ configure: (inout HTTPServer.Configuration) -> Void = { _ in }) -> HTTPServerShared {
        var configuration = HTTPServer.Configuration()
        configure(&configuration)
        return HTTPServerShared(
            responder: TestServer.makeRouter(probe: TestRouteProbe()), configuration: configuration,
            logger: Logger(label: "test"))
    }

    static func activeChannel(_ handlers: [any ChannelHandler]) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(handlers)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    /// Shuttles bytes between the peer and the channel until neither has anything to say.
    static func exchange(_ peer: FakeHTTP2Peer, _ channel: EmbeddedChannel) throws {
        for _ in 0..<20 {
            var progressed = false
            let out = peer.output()
            if out.readableBytes > 0 {
                try channel.writeInbound(out)
                progressed = true
            }
            channel.embeddedEventLoop.run()
            while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
                try peer.session.receive(buffer)
                progressed = true
            }
            if !progressed { return }
        }
    }

    // MARK: Sniffer

    @Test func snifferDecidesByFirstBytes() {
        #expect(HTTPProtocolSniffer.decide(ByteBuffer(string: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")) == .http2)
        #expect(HTTPProtocolSniffer.decide(ByteBuffer(string: "PRI * HTT")) == .needMoreBytes)
        #expect(HTTPProtocolSniffer.decide(ByteBuffer(string: "GET / HTTP/1.1\r\n")) == .http1)
        #expect(HTTPProtocolSniffer.decide(ByteBuffer(string: "PRI * HTTP/1.1")) == .http1)
        #expect(HTTPProtocolSniffer.decide(ByteBuffer()) == .needMoreBytes)
    }

    @Test func snifferInstallsHTTP2AfterASplitPreface() throws {
        let channel = try Self.activeChannel([HTTPProtocolSniffer(shared: Self.shared())])
        try channel.writeInbound(ByteBuffer(string: "PRI * HTTP/2.0\r\n"))
        #expect(throws: Never.self) { try channel.pipeline.syncOperations.handler(type: HTTPProtocolSniffer.self) }
        try channel.writeInbound(ByteBuffer(string: "\r\nSM\r\n\r\n"))
        #expect(throws: Never.self) { try channel.pipeline.syncOperations.handler(type: HTTP2ServerConnectionHandler.self) }
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: HTTPProtocolSniffer.self) }
        _ = try? channel.finish()
    }

    // MARK: HTTP/2

    @Test func pseudoHeaderNames() {
        func kind(_ name: String) -> NGHTTP2PseudoHeader {
            Array(name.utf8).withUnsafeBufferPointer { NGHTTP2PseudoHeader($0) }
        }
        #expect(kind(":method") == .method)
        #expect(kind(":scheme") == .scheme)
        #expect(kind(":status") == .status)
        #expect(kind(":authority") == .authority)
        #expect(kind(":path") == .path)
        #expect(kind(":protocol") == .other)
    }

    @Test func http2ImmediateRouteAndUnknownRoute() throws {
        let channel = try Self.activeChannel([HTTP2ServerConnectionHandler(shared: Self.shared())])
        let peer = FakeHTTP2Peer()
        let health = peer.request(.get, "/healthz")
        let missing = peer.request(.get, "/missing")
        let echo = peer.request(.post, "/echo", body: "hi there")
        try Self.exchange(peer, channel)
        #expect(peer.statuses[health] == 200)
        #expect(peer.bodies[health] == #"{"status":"ok"}"#)
        #expect(peer.headers[health]?["content-length"] == "15")
        #expect(peer.statuses[missing] == 404)
        #expect(peer.statuses[echo] == 200)
        #expect(peer.bodies[echo] == "hi there")
        #expect(peer.ended == [health, missing, echo])
        _ = try? channel.finish()
    }

    /// An HTTP/2 response head: the status and the content length as digits, a `date`, the handler's own fields, and
    /// none of the connection-specific fields RFC 9113 §8.2.2 forbids even when the handler set them.
    @Test func http2ResponseHeadLeavesOutConnectionFields() throws {
        let channel = try Self.activeChannel([HTTP2ServerConnectionHandler(shared: Self.shared())])
        let peer = FakeHTTP2Peer()
        let stream = peer.request(.get, "/connection-fields")
        try Self.exchange(peer, channel)
        #expect(peer.statuses[stream] == 202)
        #expect(peer.bodies[stream] == "done")
        let headers = try #require(peer.headers[stream])
        #expect(headers["content-length"] == "4")
        #expect(headers["x-kept"] == "yes")
        #expect(headers["date"]?.hasSuffix(" GMT") == true, "\(headers)")
        for name in ["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection"] {
            #expect(headers[name] == nil, "\(name) in \(headers)")
        }
        _ = try? channel.finish()
    }

    /// What a gate hands over with `.admit` reaches that request's handler, and only that request's.
    @Test func http2GateAdmissionReachesItsHandler() throws {
        let channel = try Self.activeChannel([HTTP2ServerConnectionHandler(shared: Self.shared())])
        let peer = FakeHTTP2Peer()
        let admitted = peer.request(.post, "/admitted", fields: [HTTPField.Name("X-Pass")!: "one"], body: "x")
        let bare = peer.request(.post, "/admitted", body: "x")
        let promised = peer.request(.post, "/admitted-promised", fields: [HTTPField.Name("X-Pass")!: "two"], body: "x")
        try Self.exchange(peer, channel)
        #expect(peer.bodies[admitted] == "admitted one")
        #expect(peer.bodies[bare] == "none")
        #expect(peer.bodies[promised] == "admitted two")
        _ = try? channel.finish()
    }

    @Test func http2BodyOverLimitAndHeadersOverLimit() throws {
        let channel = try Self.activeChannel([
            HTTP2ServerConnectionHandler(shared: Self.shared { $0.maxHeaderListSize = 1024 })
        ])
        let peer = FakeHTTP2Peer()
        let tooBig = peer.request(.post, "/echo", body: String(repeating: "x", count: 2000))
        let bigHeaders = peer.request(.get, "/healthz", fields: [HTTPField.Name("x-big")!: String(repeating: "y", count: 2000)])
        try Self.exchange(peer, channel)
        #expect(peer.statuses[tooBig] == 413)
        #expect(peer.statuses[bigHeaders] == 431)
        _ = try? channel.finish()
    }

    @Test func http2GarbageAfterPrefaceClosesTheConnection() throws {
        let channel = try Self.activeChannel([HTTP2ServerConnectionHandler(shared: Self.shared())])
        var bytes = ByteBuffer(bytes: HTTPProtocolSniffer.preface)
        bytes.writeBytes([0, 0, 4, 0x99, 0, 0, 0, 0, 0])  // unknown frame type before SETTINGS: a protocol error
        bytes.writeBytes([0, 0, 0])
        try channel.writeInbound(bytes)
        channel.embeddedEventLoop.run()
        #expect(!channel.isActive)
    }

    @Test func http2DrainSendsGoAway() throws {
        let channel = try Self.activeChannel([HTTP2ServerConnectionHandler(shared: Self.shared())])
        let peer = FakeHTTP2Peer()
        _ = peer.request(.get, "/healthz")
        try Self.exchange(peer, channel)
        channel.pipeline.fireUserInboundEventTriggered(HTTPServerConnectionEvent.drain)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(200))
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { try peer.session.receive(buffer) }
        #expect(peer.goAwayCode == 0)
        #expect(!channel.isActive)
    }

    // MARK: HTTP/1.1

    static func http1Exchange(_ request: String, shared: HTTPServerShared = shared()) throws -> (String, Bool) {
        let channel = try activeChannel(HTTP1ServerConnectionHandler.pipeline(shared: shared))
        // The handler may close the connection mid-request (413, 431); the decoder then reports the cut request.
        _ = try? channel.writeInbound(ByteBuffer(string: request))
        channel.embeddedEventLoop.run()
        var answer = ""
        while let buffer = try channel.readOutbound(as: IOData.self) {
            if case .byteBuffer(let bytes) = buffer { answer += String(buffer: bytes) }
        }
        let open = channel.isActive
        _ = try? channel.finish()
        return (answer, open)
    }

    @Test func http1KeepAliveAndClose() throws {
        let (answer, open) = try Self.http1Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(answer.hasSuffix("\r\n\r\n{\"status\":\"ok\"}"))
        #expect(open)
        let (closing, stillOpen) = try Self.http1Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(closing.lowercased().contains("connection: close"))
        #expect(!stillOpen)
    }

    @Test func http1BodyLimitHeadLimitAndBadRequest() throws {
        let (tooLarge, open) = try Self.http1Exchange(
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n")
        #expect(tooLarge.hasPrefix("HTTP/1.1 413"))
        #expect(!open)
        let (chunked, _) = try Self.http1Exchange(
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n" + String(repeating: "z", count: 2048)
                + "\r\n0\r\n\r\n")
        #expect(chunked.hasPrefix("HTTP/1.1 413"))
        let (headers, _) = try Self.http1Exchange(
            "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "q", count: 20_000))\r\n\r\n")
        #expect(headers.hasPrefix("HTTP/1.1 431"))
        let (bad, _) = try Self.http1Exchange("\u{01}\u{02}\r\n\r\n")
        #expect(bad.hasPrefix("HTTP/1.1 400"))
    }

    /// On one HTTP/1.1 connection: the gate's admission for a request reaches its handler and not the next one's.
    @Test func http1GateAdmissionReachesItsHandler() throws {
        let (answer, _) = try Self.http1Exchange(
            "POST /admitted HTTP/1.1\r\nHost: x\r\nX-Pass: one\r\nContent-Length: 1\r\n\r\nx"
                + "POST /admitted HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx"
                + "POST /admitted-promised HTTP/1.1\r\nHost: x\r\nX-Pass: two\r\nContent-Length: 1\r\n\r\nx")
        let bodies = answer.components(separatedBy: "HTTP/1.1 200 OK").dropFirst().map {
            $0.components(separatedBy: "\r\n\r\n").last ?? ""
        }
        #expect(bodies == ["admitted one", "none", "admitted two"], "\(answer)")
    }

    @Test func h2cUpgradeHeaderRecognition() {
        var fields = HTTPFields()
        fields[.connection] = "Upgrade, HTTP2-Settings"
        fields[.upgrade] = "h2c"
        fields[HTTPField.Name("HTTP2-Settings")!] = "AAMAAABkAAQAAP__"
        #expect(HTTP1ServerConnectionHandler.h2cUpgradeSettings(fields) == [0, 3, 0, 0, 0, 100, 0, 4, 0, 0, 255, 255])
        fields[.contentLength] = "10"
        #expect(HTTP1ServerConnectionHandler.h2cUpgradeSettings(fields) == nil)
    }
}
