import Logging
import NIOCore

/// Stands in for a `TLSHandler` that could not be created (OpenSSL out of memory): logs once, closes the channel.
final class FailedTLSHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let error: TLSError
    private let logger: Logger

    init(error: TLSError, logger: Logger) {
        self.error = error
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        logger.error("TLS connection setup failed", metadata: ["tls.error": "\(error.message)"])
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
