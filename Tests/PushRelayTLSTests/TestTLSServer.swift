import NIOCore
import NIOHTTP1
import NIOPosix
import PushRelayTLS

/// A real listener on 127.0.0.1 (port 0): the TLS handler first, then NIOHTTP1 and `FakeHTTP1Responder`.
struct TestTLSServer {
    let channel: any Channel
    var port: Int { channel.localAddress!.port! }

    static func start(_ context: TLSServerContext) async throws -> TestTLSServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(context.makeHandler())
                    try pipeline.configureHTTPServerPipeline()
                    try pipeline.addHandler(FakeHTTP1Responder())
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return TestTLSServer(channel: channel)
    }

    func stop() async throws {
        try await channel.close()
    }
}
