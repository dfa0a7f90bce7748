import Logging
import NIOCore

/// Stands in for a `TLSHandler` that could not be created (OpenSSL out of memory, a host name OpenSSL refuses):
/// once the channel is active it logs once, fires the `TLSError` through `errorCaught` and closes the channel.
final class FailedTLSHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let error: TLSError
    private let logger: Logger
    private var failed = false

    init(error: TLSError, logger: Logger) {
        self.error = error
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive {
            // Let the channel initializer finish adding the handlers that should see the error.
            context.eventLoop.assumeIsolated().execute { self.fail(context: context) }
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        fail(context: context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    private func fail(context: ChannelHandlerContext) {
        guard !failed else { return }
        failed = true
        logger.error("TLS connection setup failed", metadata: ["tls.error": "\(error.message)"])
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }
}
