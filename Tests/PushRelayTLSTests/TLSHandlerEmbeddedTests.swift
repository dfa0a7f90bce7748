import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import PushRelayTLS

/// The handler's buffering, promises and close behaviour, deterministic: a client and a server `EmbeddedChannel`
/// wired back to back, ciphertext moved between them by hand.
@Suite("TLS handler on embedded channels", .serialized)
struct TLSHandlerEmbeddedTests {
    /// Records what reaches the application above the TLS handler.
    final class ApplicationRecorder: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        var handshakes: [TLSHandshakeCompleted] = []
        var errors: [any Error] = []
        var received = ByteBuffer()
        /// The peer's close_notify (TLS 1.3) arrived as the end of its input.
        var inputClosed = false

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if let event = event as? TLSHandshakeCompleted { handshakes.append(event) }
            if let event = event as? ChannelEvent, event == .inputClosed { inputClosed = true }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            errors.append(error)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            received.writeBuffer(&buffer)
        }
    }

    struct Pair {
        let client: EmbeddedChannel
        let server: EmbeddedChannel
        let clientApp: ApplicationRecorder
        let serverApp: ApplicationRecorder
        /// Ciphertext buffers the client wrote below its TLS handler, counted.
        var clientWrites = 0

        /// Closes what is still open and runs the loops, so the pipelines are torn down (no leaked handlers).
        func finish() {
            _ = try? client.finish(acceptAlreadyClosed: true)
            _ = try? server.finish(acceptAlreadyClosed: true)
        }

        /// Moves ciphertext both ways until neither side has anything left to send.
        mutating func interact() throws {
            var moved = true
            while moved {
                moved = false
                while let bytes = try client.readOutbound(as: ByteBuffer.self) {
                    clientWrites += 1
                    moved = true
                    if server.isActive { try server.writeInbound(bytes) }
                }
                while let bytes = try server.readOutbound(as: ByteBuffer.self) {
                    moved = true
                    if client.isActive { try client.writeInbound(bytes) }
                }
            }
        }
    }

    private func makePair(_ certificates: TestCertificates, clientProtocols: [String] = ["h2", "http/1.1"]) throws -> Pair {
        let logger = RecordingLogHandler.makeLogger().0
        let serverContext = try TLSServerContext(
            configuration: TLSServerConfiguration(
                certificateChainFile: certificates.serverCertificateA, privateKeyFile: certificates.serverKeyA),
            logger: logger
        )
        let clientContext = try TLSClientContext(
            configuration: TLSClientConfiguration(
                trustRoots: .certificateFile(certificates.caFile), applicationProtocols: clientProtocols),
            logger: logger
        )
        let clientApp = ApplicationRecorder()
        let serverApp = ApplicationRecorder()
        let client = EmbeddedChannel()
        let server = EmbeddedChannel()
        try client.pipeline.syncOperations.addHandlers([clientContext.makeHandler(serverHostname: "localhost"), clientApp])
        try server.pipeline.syncOperations.addHandlers([serverContext.makeHandler(), serverApp])
        return Pair(client: client, server: server, clientApp: clientApp, serverApp: serverApp)
    }

    /// Records a future's result as soon as the embedded loop completes it.
    final class Outcome {
        var result: Result<Void, any Error>?
        var isFulfilled: Bool { result != nil }
        var failed: Bool { if case .failure = result { true } else { false } }
        init(_ future: EventLoopFuture<Void>) {
            future.assumeIsolated().whenComplete { self.result = $0 }
        }
    }

    private func connect(_ pair: inout Pair) throws {
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: 443)
        try pair.server.connect(to: address).wait()
        try pair.client.connect(to: address).wait()
        try pair.interact()
    }

    @Test("both sides report the handshake; writes made before it are sent after it, promises complete")
    func handshakeAndEarlyWrites() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        try handshakeAndEarlyWrites(certificates)
    }

    private func handshakeAndEarlyWrites(_ certificates: TestCertificates) throws {
        var pair = try makePair(certificates)
        defer { pair.finish() }
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: 443)
        try pair.server.connect(to: address).wait()
        try pair.client.connect(to: address).wait()
        let early = Outcome(pair.client.pipeline.syncOperations.writeAndFlush(NIOAny(ByteBuffer(string: "early bytes"))))
        #expect(!early.isFulfilled)
        try pair.interact()
        #expect(pair.clientApp.handshakes == [TLSHandshakeCompleted(applicationProtocol: "h2", protocolVersion: "TLSv1.3")])
        #expect(pair.serverApp.handshakes == [TLSHandshakeCompleted(applicationProtocol: "h2", protocolVersion: "TLSv1.3")])
        #expect(early.isFulfilled && !early.failed)
        #expect(String(buffer: pair.serverApp.received) == "early bytes")

        pair.server.pipeline.syncOperations.writeAndFlush(NIOAny(ByteBuffer(string: "reply")), promise: nil)
        try pair.interact()
        #expect(String(buffer: pair.clientApp.received) == "reply")
    }

    @Test("many small writes before one flush arrive intact and are coalesced into few records")
    func coalescedWrites() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        try coalescedWrites(certificates)
    }

    private func coalescedWrites(_ certificates: TestCertificates) throws {
        var pair = try makePair(certificates)
        defer { pair.finish() }
        try connect(&pair)
        pair.clientWrites = 0
        var expected = ByteBuffer()
        var promises: [Outcome] = []
        for index in 0..<10_000 {
            let piece = ByteBuffer(string: "piece \(index);")
            expected.writeImmutableBuffer(piece)
            promises.append(Outcome(pair.client.pipeline.syncOperations.write(NIOAny(piece))))
        }
        // A big one in the middle goes through unbatched.
        let big = ByteBuffer(repeating: 0x5a, count: 100_000)
        expected.writeImmutableBuffer(big)
        promises.append(Outcome(pair.client.pipeline.syncOperations.write(NIOAny(big))))
        #expect(!promises[0].isFulfilled)
        pair.client.pipeline.flush()
        try pair.interact()
        #expect(promises.allSatisfy { $0.isFulfilled && !$0.failed })
        #expect(pair.serverApp.received == expected)
        #expect(pair.clientWrites == 1)
    }

    @Test("close sends close_notify; on TLS 1.3 the peer hears the end of the input, writes on, and its close answers; later writes fail")
    func closeNotify() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        try closeNotify(certificates)
    }

    private func closeNotify(_ certificates: TestCertificates) throws {
        var pair = try makePair(certificates)
        defer { pair.finish() }
        try connect(&pair)
        let unflushed = Outcome(pair.client.pipeline.syncOperations.write(NIOAny(ByteBuffer(string: "never flushed"))))
        let closed = Outcome(pair.client.pipeline.close())
        #expect(unflushed.failed)
        // The client's close waits for its close_notify to be written: Embedded completes writes at once.
        try pair.interact()
        #expect(closed.isFulfilled && !closed.failed)
        #expect(!pair.client.isActive)
        // TLS 1.3 (RFC 8446 §6.1): the client's close_notify ends its side only; the server's application hears
        // it as the end of the input and may still write (an HTTP server answers what it read), then closes.
        #expect(pair.serverApp.inputClosed)
        #expect(pair.server.isActive)
        let answer = Outcome(pair.server.pipeline.syncOperations.writeAndFlush(NIOAny(ByteBuffer(string: "answer"))))
        #expect(answer.isFulfilled && !answer.failed)
        let serverClosed = Outcome(pair.server.pipeline.close())
        try pair.interact()
        #expect(serverClosed.isFulfilled && !serverClosed.failed)
        #expect(!pair.server.isActive)
        #expect(pair.serverApp.errors.isEmpty)
        #expect(pair.serverApp.received.readableBytes == 0)
        let late = Outcome(pair.server.pipeline.syncOperations.writeAndFlush(NIOAny(ByteBuffer(string: "late"))))
        #expect(late.failed)
    }

    @Test("a client whose server never answers gives up after the handshake timeout with a TLSError")
    func clientHandshakeTimeout() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        try clientHandshakeTimeout(certificates)
    }

    private func clientHandshakeTimeout(_ certificates: TestCertificates) throws {
        let pair = try makePair(certificates)
        defer { pair.finish() }
        try pair.client.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        #expect(try pair.client.readOutbound(as: ByteBuffer.self) != nil)  // the ClientHello
        pair.client.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(pair.client.isActive)
        pair.client.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!pair.client.isActive)
        let error = pair.clientApp.errors.first as? TLSError
        #expect(error?.code == .handshakeTimeout)
    }

    @Test("a server-side record error after the handshake is fired as a protocolError and closes")
    func corruptedRecord() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        try corruptedRecord(certificates)
    }

    private func corruptedRecord(_ certificates: TestCertificates) throws {
        var pair = try makePair(certificates)
        defer { pair.finish() }
        try connect(&pair)
        pair.client.pipeline.syncOperations.writeAndFlush(NIOAny(ByteBuffer(string: "secret")), promise: nil)
        var record = try #require(try pair.client.readOutbound(as: ByteBuffer.self))
        let last = record.writerIndex - 1
        record.setInteger(record.getInteger(at: last, as: UInt8.self)! ^ 0xff, at: last)
        try pair.server.writeInbound(record)
        #expect((pair.serverApp.errors.first as? TLSError)?.code == .protocolError)
        #expect(!pair.server.isActive)
        #expect(pair.serverApp.received.readableBytes == 0)
    }

    @Test("a host name OpenSSL refuses is reported through errorCaught when the channel becomes active")
    func invalidHostName() throws {
        let context = try TLSClientContext(logger: RecordingLogHandler.makeLogger().0)
        let recorder = ApplicationRecorder()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers([
            context.makeHandler(serverHostname: String(repeating: "a", count: 300)), recorder,
        ])
        #expect(recorder.errors.isEmpty)
        try channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        #expect((recorder.errors.first as? TLSError)?.code == .invalidConfiguration)
        #expect(!channel.isActive)
        _ = try? channel.finish(acceptAlreadyClosed: true)
    }
}
