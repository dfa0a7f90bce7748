import PushRelayWire
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import PushRelayClient
@testable import PushRelayClientNIO

/// The HTTP/1.1 heartbeat timeout on an `EmbeddedChannel`, with virtual time: no wall clock, no race.
@Suite("IdleReadTimeoutHandler")
struct IdleReadTimeoutHandlerTests {
    /// Records the errors that reach the end of the pipeline.
    final class ErrorRecorder: ChannelInboundHandler {
        typealias InboundIn = HTTPClientResponsePart
        var errors: [any Error] = []

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            errors.append(error)
        }
    }

    static func makeChannel() throws -> (EmbeddedChannel, ErrorRecorder) {
        let recorder = ErrorRecorder()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            IdleReadTimeoutHandler(headTimeout: .seconds(30), idleTimeout: .milliseconds(300)))
        try channel.pipeline.syncOperations.addHandler(recorder)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, recorder)
    }

    static func isHeartbeatTimeout(_ errors: [any Error]) -> Bool {
        errors.count == 1 && (errors.first as? PushClientError)?.code == .heartbeatTimeout
    }

    @Test("a slow response head is not a silent stream: only the head timeout applies before it")
    func slowHead() throws {
        let (channel, recorder) = try Self.makeChannel()
        channel.embeddedEventLoop.advanceTime(by: .seconds(29))
        #expect(recorder.errors.isEmpty)
        #expect(channel.isActive)
        try channel.writeInbound(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(299))
        #expect(recorder.errors.isEmpty)
        _ = try? channel.finish()
    }

    @Test("after the head, silence for the idle timeout fails with heartbeatTimeout and closes")
    func silentStream() throws {
        let (channel, recorder) = try Self.makeChannel()
        try channel.writeInbound(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(200))
        try channel.writeInbound(HTTPClientResponsePart.body(ByteBuffer(string: ":\n\n")))  // A heartbeat.
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(200))
        #expect(recorder.errors.isEmpty)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(100))
        #expect(Self.isHeartbeatTimeout(recorder.errors))
        #expect(!channel.isActive)
    }

    @Test("no head at all within the head timeout fails too")
    func noHead() throws {
        let (channel, recorder) = try Self.makeChannel()
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(Self.isHeartbeatTimeout(recorder.errors))
        #expect(!channel.isActive)
    }
}
