import NIOCore
import NIOPosix

/// A plain TCP peer that writes bytes nobody should accept as TLS.
enum RawConnection {
    /// Writes `bytes`, closes, and returns once the channel is closed.
    static func sendThenClose(port: Int, bytes: [UInt8]) async throws {
        let channel = try await connect(port: port)
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes))
        try await channel.close()
    }

    /// Writes `bytes` and waits for the server to close the connection.
    static func sendAndAwaitClose(port: Int, bytes: [UInt8]) async throws {
        let channel = try await connect(port: port)
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes))
        try await channel.closeFuture.get()
    }

    private static func connect(port: Int) async throws -> any Channel {
        try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.allowRemoteHalfClosure, value: false)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Discard()) }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
    }

    private final class Discard: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
        func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
    }
}
