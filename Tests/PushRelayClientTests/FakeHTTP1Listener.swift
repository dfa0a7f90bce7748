import NIOCore
import NIOHTTP1
import NIOPosix

/// The listening socket of the HTTP/1.1 fakes (``FakeRelayServer``, ``FakeFloodingRelay``): 127.0.0.1, port 0,
/// each connection with NIO's HTTP/1.1 server pipeline and then the handler `makeHandler` returns for it. The fake
/// object a handler talks to is made after the bind (it holds the channel), so `makeHandler` runs per connection.
func bindFakeHTTP1Listener(
    _ makeHandler: @escaping @Sendable () -> any ChannelHandler
) async throws -> any Channel {
    try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                try channel.pipeline.syncOperations.addHandler(makeHandler())
            }
        }
        .bind(host: "127.0.0.1", port: 0).get()
}
