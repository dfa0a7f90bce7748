import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PushRelayTLS

/// A connection made with `TLSClientContext` for the tests: records the handshake result and the bytes
/// received, and sends raw bytes (HTTP/1.1 requests written by hand).
final class TestTLSClientConnection: Sendable {
    let channel: any Channel
    private let recorder: NIOLoopBound<Recorder>

    private init(channel: any Channel, recorder: NIOLoopBound<Recorder>) {
        self.channel = channel
        self.recorder = recorder
    }

    static func connect(
        _ context: TLSClientContext,
        port: Int,
        serverHostname: String = "localhost"
    ) async throws -> TestTLSClientConnection {
        // The recorder is kept from the initializer: a failed handshake may tear the pipeline down before
        // `connect` returns.
        let made = NIOLockedValueBox<NIOLoopBound<Recorder>?>(nil)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let recorder = Recorder(eventLoop: channel.eventLoop)
                    made.withLockedValue { $0 = NIOLoopBound(recorder, eventLoop: channel.eventLoop) }
                    try channel.pipeline.syncOperations.addHandler(
                        context.makeHandler(serverHostname: serverHostname))
                    try channel.pipeline.syncOperations.addHandler(recorder)
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
        let recorder = made.withLockedValue { $0 }!
        return TestTLSClientConnection(channel: channel, recorder: recorder)
    }

    /// The handshake's outcome: the event, or the `TLSError` the handler fired.
    func handshake() async throws -> TLSHandshakeCompleted {
        try await channel.eventLoop.flatSubmit { self.recorder.value.handshake.futureResult }.get()
    }

    /// Sends `text` and waits until the bytes received so far contain `expected`; returns them all.
    func send(_ text: String, thenWaitFor expected: String) async throws -> String {
        try await channel.eventLoop.flatSubmit {
            let recorder = self.recorder.value
            let promise = self.channel.eventLoop.makePromise(of: String.self)
            recorder.waiter = (expected, promise)
            recorder.check()
            self.channel.writeAndFlush(self.channel.allocator.buffer(string: text), promise: nil)
            return promise.futureResult
        }.get()
    }

    func close() async {
        try? await channel.close()
    }

    final class Recorder: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let handshake: EventLoopPromise<TLSHandshakeCompleted>
        var received = ""
        var waiter: (expected: String, promise: EventLoopPromise<String>)?

        init(eventLoop: any EventLoop) {
            handshake = eventLoop.makePromise()
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if let event = event as? TLSHandshakeCompleted { handshake.succeed(event) }
            context.fireUserInboundEventTriggered(event)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            handshake.fail(error)
            waiter?.promise.fail(error)
            waiter = nil
        }

        func channelInactive(context: ChannelHandlerContext) {
            handshake.fail(ChannelError.eof)
            waiter?.promise.fail(ChannelError.eof)
            waiter = nil
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            received += String(buffer: unwrapInboundIn(data))
            check()
        }

        func check() {
            if let waiter, received.contains(waiter.expected) {
                self.waiter = nil
                waiter.promise.succeed(received)
                received = ""
            }
        }
    }
}
