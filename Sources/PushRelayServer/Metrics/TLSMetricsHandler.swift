import NIOCore

import PushRelayTLS

/// Counts the TLS handshakes of one accepted connection in ``RelayMetrics``.
///
/// The transport takes one handler per TLS connection (`HTTPServer.Listener.tlsHandlerFactory`); this is that
/// handler: when added it puts the connection's TLS handler in front of itself, then watches what comes up. A
/// `TLSHandshakeCompleted` event counts a handshake by ALPN result, a `TLSHandshakeFailed` event a failure by its
/// reason (`protocol`, `certificate`, `timeout`, `eof`, `internal`); a connection closing with neither counts as
/// `eof`.
final class TLSMetricsHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let tlsHandler: any ChannelHandler
    private let metrics: RelayMetrics
    private var handshakeCompleted = false

    init(tlsHandler: any ChannelHandler, metrics: RelayMetrics) {
        self.tlsHandler = tlsHandler
        self.metrics = metrics
    }

    /// The listener's handler factory: a TLS handler from `context` for each connection, with its metrics.
    static func factory(context: TLSServerContext, metrics: RelayMetrics) -> @Sendable () -> any ChannelHandler {
        { TLSMetricsHandler(tlsHandler: context.makeHandler(), metrics: metrics) }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        do {
            try context.pipeline.syncOperations.addHandler(tlsHandler, position: .before(self))
        } catch {
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let completed = event as? TLSHandshakeCompleted, !handshakeCompleted {
            handshakeCompleted = true
            metrics.tlsHandshakeCompleted(alpn: completed.applicationProtocol)
        } else if let failed = event as? TLSHandshakeFailed, !handshakeCompleted {
            handshakeCompleted = true
            metrics.tlsHandshakeFailed(reason: failed.error.handshakeFailureReason)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !handshakeCompleted {
            handshakeCompleted = true
            metrics.tlsHandshakeFailed(reason: "eof")
        }
        context.fireChannelInactive()
    }
}
