import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A hostile relay for the transports' tests: HTTP/1.1 on loopback, port 0. Each `GET /v1/stream` gets the next
/// of the streams it was made with (the last one again when they run out); any other request gets `200 {}` (so
/// acknowledgements succeed).
///
/// A ``Stream/flood(prefix:bytes:)`` stream sends its prefix and then heartbeat comments (64 KiB lines, valid event
/// stream) as fast as the connection takes them, one write at a time, until `bytes` are written or the client
/// closes the connection: a server that sends far faster than its client reads.
final class FakeFloodingRelay: Sendable {
    enum Stream: Sendable {
        /// `prefix`, then comments, `bytes` in all.
        case flood(prefix: String, bytes: Int)
        /// `: welcome`, then only what the test writes with ``write(_:toStream:)``.
        case quiet
    }

    /// What one stream request saw.
    struct StreamRecord: Sendable {
        /// The request's `Last-Event-ID`.
        var lastEventID: String?
        /// Body bytes the connection took (written to the socket).
        var bytesWritten = 0
        /// Whether the connection closed; the fake never closes a stream itself.
        var closed = false
    }

    private struct State {
        var records: [StreamRecord] = []
        var channels: [any Channel] = []
    }

    let channel: any Channel
    private let plan: [Stream]
    private let state = NIOLockedValueBox(State())

    var serverURL: URL { URL(string: "http://127.0.0.1:\(channel.localAddress!.port!)")! }
    /// The stream requests so far, in order.
    var streams: [StreamRecord] { state.withLockedValue { $0.records } }

    private init(channel: any Channel, plan: [Stream]) {
        self.channel = channel
        self.plan = plan
    }

    /// Starts the fake on 127.0.0.1, port 0.
    static func start(_ plan: [Stream]) async throws -> FakeFloodingRelay {
        precondition(!plan.isEmpty)
        let box = NIOLockedValueBox<FakeFloodingRelay?>(nil)
        let channel = try await bindFakeHTTP1Listener { FakeFloodingRelayHandler(relay: box.withLockedValue { $0! }) }
        let relay = FakeFloodingRelay(channel: channel, plan: plan)
        box.withLockedValue { $0 = relay }
        return relay
    }

    func shutdown() async throws {
        let channels = state.withLockedValue { $0.channels }
        for channel in channels { try? await channel.close() }
        try await channel.close()
    }

    /// Waits until the client closed stream `index` (bounded by ``withTimeout(_:_:_:)``, not a timing assertion).
    func waitUntilClosed(stream index: Int) async throws {
        try await withTimeout(20, "the client to close stream \(index)") {
            while self.state.withLockedValue({ $0.records.count <= index || !$0.records[index].closed }) {
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    /// Writes `text` on open stream `index`; returns when the connection took it.
    func write(_ text: String, toStream index: Int) async throws {
        let channel = state.withLockedValue { $0.channels[index] }
        let buffer = channel.allocator.buffer(string: text)
        try await channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer)))
        state.withLockedValue { $0.records[index].bytesWritten += buffer.readableBytes }
    }

    // MARK: Called by the handler on the connection's event loop.

    fileprivate func openStream(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let channel = context.channel
        let index = state.withLockedValue { state in
            state.records.append(StreamRecord(lastEventID: head.headers.first(name: "Last-Event-ID")))
            state.channels.append(channel)
            return state.records.count - 1
        }
        channel.closeFuture.whenComplete { [weak self] _ in
            self?.state.withLockedValue { $0.records[index].closed = true }
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/event-stream")
        headers.add(name: "Cache-Control", value: "no-cache")
        context.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok,
                                                                           headers: headers))), promise: nil)
        switch plan[min(index, plan.count - 1)] {
        case .quiet:
            let welcome = channel.allocator.buffer(string: ": welcome\n\n")
            context.writeAndFlush(NIOAny(HTTPServerResponsePart.body(.byteBuffer(welcome))), promise: nil)
        case .flood(let prefix, let bytes):
            let comment = channel.allocator.buffer(string: ":" + String(repeating: "x", count: 65_534) + "\n")
            pump(channel.allocator.buffer(string: prefix), then: comment, remaining: bytes, on: channel, index: index)
        }
    }

    /// Writes `buffer`, then (from the event loop, not from the write's completion, so that the stack stays flat)
    /// `comment` again and again until `remaining` bytes are written or a write fails.
    private func pump(
        _ buffer: ByteBuffer, then comment: ByteBuffer, remaining: Int, on channel: any Channel, index: Int
    ) {
        guard remaining > 0 else { return }
        let buffer = buffer.getSlice(at: buffer.readerIndex, length: min(buffer.readableBytes, remaining))!
        channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer))).whenSuccess { [weak self] in
            guard let self else { return }
            state.withLockedValue { $0.records[index].bytesWritten += buffer.readableBytes }
            channel.eventLoop.execute {
                self.pump(comment, then: comment, remaining: remaining - buffer.readableBytes, on: channel,
                          index: index)
            }
        }
    }
}

/// One connection of the flooding fake.
private final class FakeFloodingRelayHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let relay: FakeFloodingRelay
    private var head: HTTPRequestHead?

    init(relay: FakeFloodingRelay) {
        self.relay = relay
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head else { return }
            if head.method == .GET && head.uri.hasPrefix("/v1/stream") {
                relay.openStream(head, context: context)
                return
            }
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: "2")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                          promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: "{}")))),
                          promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
