import NIOCore

/// Turns the `IdleStateHandler`'s read-idle event into a ``PushClientError/Code-swift.struct/heartbeatTimeout``
/// error and closes the connection: a silent stream is declared dead.
final class IdleReadTimeoutHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .read? = event as? IdleStateHandler.IdleStateEvent {
            context.fireErrorCaught(PushClientError(code: .heartbeatTimeout,
                                                    message: "no data or heartbeat within the heartbeat timeout"))
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
