import NIOCore
import NIOHTTP1

/// Chooses HTTP/2 or HTTP/1.1 by a connection's first bytes, then replaces itself with that protocol's handlers.
///
/// The HTTP/2 client preface (`PRI * HTTP/2.0…`) selects HTTP/2 (prior knowledge, or `h2` after TLS ALPN);
/// anything else is HTTP/1.1, where NIOHTTP1 answers malformed input with `400`.
final class HTTPProtocolSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// The 24-byte HTTP/2 connection preface (RFC 9113 §3.4).
    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// Which protocol a byte prefix shows, if it shows one yet.
    enum Decision: Equatable {
        case http2
        case http1
        case needMoreBytes
    }

    private let shared: HTTPServerShared
    private var buffered: ByteBuffer?
    /// The protocol's handlers are in place (this one is on its way out): events are theirs.
    private var switched = false
    /// Closes a connection that has not shown its protocol within the idle timeout.
    private var idleClose: Scheduled<Void>?

    init(shared: HTTPServerShared) {
        self.shared = shared
    }

    /// Decides from the bytes received so far.
    static func decide(_ bytes: ByteBuffer) -> Decision {
        let count = min(bytes.readableBytes, preface.count)
        let prefix = bytes.getBytes(at: bytes.readerIndex, length: count) ?? []
        guard prefix.elementsEqual(preface.prefix(count)) else { return .http1 }
        return count == preface.count ? .http2 : .needMoreBytes
    }

    func handlerAdded(context: ChannelHandlerContext) {
        guard let idleTimeout = shared.configuration.idleTimeout else { return }
        let channel = context.channel
        idleClose = context.eventLoop.scheduleTask(in: idleTimeout) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleClose?.cancel()
        idleClose = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        if var buffered = self.buffered {
            buffered.writeBuffer(&incoming)
            incoming = buffered
        }
        switch Self.decide(incoming) {
        case .needMoreBytes:
            buffered = incoming
        case .http2:
            buffered = nil
            switchTo(context: context, handlers: [HTTP2ServerConnectionHandler(shared: shared)], bytes: incoming)
        case .http1:
            buffered = nil
            switchTo(context: context, handlers: HTTP1ServerConnectionHandler.pipeline(shared: shared), bytes: incoming)
        }
    }

    private func switchTo(context: ChannelHandlerContext, handlers: [any ChannelHandler], bytes: ByteBuffer) {
        switched = true
        do {
            try context.pipeline.syncOperations.addHandlers(handlers, position: .after(self))
        } catch {
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(wrapInboundOut(bytes))
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? HTTPServerConnectionEvent, case .drain = event {
            // Nothing decided yet: nothing is in flight, so the connection can just close.
            context.close(promise: nil)
        } else if let event = event as? ChannelEvent, event == .inputClosed, !switched {
            // The peer's end before a whole protocol preface or request line: nothing to answer.
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
