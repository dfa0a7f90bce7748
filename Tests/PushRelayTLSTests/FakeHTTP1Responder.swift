import NIOCore
import NIOHTTP1
import PushRelayTLS

/// A test-only HTTP/1.1 application behind the TLS handler (the real transport is another module): answers every
/// request with 200 and a body naming the ALPN protocol the handshake reported (`alpn=h2`, `alpn=none`).
final class FakeHTTP1Responder: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private var applicationProtocol = "unknown"
    private var keepAlive = true

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSHandshakeCompleted {
            applicationProtocol = event.applicationProtocol ?? "none"
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            keepAlive = head.isKeepAlive
        case .body:
            break
        case .end:
            let body = context.channel.allocator.buffer(string: "ok alpn=\(applicationProtocol)\n")
            var headers = HTTPHeaders([("content-type", "text/plain"), ("content-length", "\(body.readableBytes)")])
            if !keepAlive { headers.add(name: "connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                          promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            let keepAlive = self.keepAlive
            context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
                if !keepAlive { context.close(promise: nil) }
            }
        }
    }
}
