import NIOCore
import NIOHTTP1
import PushRelayClient

/// Declares an HTTP/1.1 response dead when it stays silent: fires a
/// ``PushClientError/Code-swift.struct/heartbeatTimeout`` error and closes the connection.
///
/// Until the response head arrives the allowance is `headTimeout` (connecting, a loaded server); from the head on,
/// every read restarts an `idleTimeout` timer. So a slow answer never counts as a silent stream, and a silent
/// stream is detected exactly `idleTimeout` after its last byte.
final class IdleReadTimeoutHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart

    private let headTimeout: TimeAmount
    private let idleTimeout: TimeAmount
    private var sawHead = false
    private var timer: Scheduled<Void>?

    init(headTimeout: TimeAmount, idleTimeout: TimeAmount) {
        self.headTimeout = headTimeout
        self.idleTimeout = idleTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        arm(context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { sawHead = true }
        arm(context: context)
        context.fireChannelRead(data)
    }

    private func arm(context: ChannelHandlerContext) {
        timer?.cancel()
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: sawHead ? idleTimeout : headTimeout) {
            let context = bound.value
            context.fireErrorCaught(PushClientError(code: .heartbeatTimeout,
                                                    message: "no data or heartbeat within the heartbeat timeout"))
            context.close(promise: nil)
        }
    }
}
