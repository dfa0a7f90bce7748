import PushRelayWire
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

@testable import PushRelayClient
@testable import PushRelayClientNIO

/// What the network tests need from a relay: where it is, how to register, how to send, how to break streams.
///
/// ``FakeRelayServer`` implements it in-process; an end-to-end harness implements it with the real daemon
/// (`send` = `POST /fcm/send` with the server key, `interruptStreams` = kill and restart the daemon), so that the
/// same scenarios run against both.
protocol RelayUnderTest: Sendable {
    /// The base URL clients connect to.
    var serverURL: URL { get }
    /// A registration the relay accepts.
    var registration: PushClientConfiguration.Registration { get }
    /// Sends the scenario's notification with `orderInfo` to `token`; returns the message id.
    func sendScenario(to token: String, orderID: Int) async throws -> String
    /// Breaks every open device stream (the connection is dropped; queued messages stay).
    func interruptStreams() async throws
}

/// An in-process relay for the client's tests: HTTP/1.1 on loopback, port 0, serving the device API from
/// architecture.md §3 with an in-memory queue.
///
/// - `POST /v1/register` (`Authorization: key=<client key>`) → `{"token","secret","sender_id"}`.
/// - `GET /v1/stream` (`Authorization: Bearer <secret>`) → `text/event-stream`: every unacknowledged message, then
///   new ones as they are enqueued. `Last-Event-ID` acknowledges up to that id.
/// - `POST /v1/ack` `{"ids":[…]}`, `DELETE /v1/register`.
///
/// With ``redeliverEverything`` it ignores acknowledgements and sends every message again on each stream, to
/// provoke duplicates (at-least-once delivery at its worst).
final class FakeRelayServer: RelayUnderTest, Sendable {
    static let clientKey = "client-key-shop"
    static let secret = "device-secret-0123456789abcdef"

    struct Recorded: Sendable {
        /// The `Last-Event-ID` of each stream request, in order (`nil` when absent).
        var lastEventIDs: [String?] = []
        /// Acknowledged ids, in order of arrival.
        var acknowledged: [String] = []
        /// Registrations received (bodies).
        var registrations: [JSON] = []
        var unregistered = false
    }

    private struct State {
        var pending: [(id: String, data: String)] = []
        var everything: [(id: String, data: String)] = []
        var streams: [ObjectIdentifier: any Channel] = [:]
        var recorded = Recorded()
        var nextID = 1_603_214_613_006_763
    }

    let channel: any Channel
    let redeliverEverything: Bool
    private let state = NIOLockedValueBox(State())

    var serverURL: URL { URL(string: "http://127.0.0.1:\(channel.localAddress!.port!)")! }
    var registration: PushClientConfiguration.Registration {
        .init(project: "shop", app: "br.com.siecola.shop", platform: "linux", clientKey: Self.clientKey)
    }
    var recorded: Recorded { state.withLockedValue { $0.recorded } }
    var openStreams: Int { state.withLockedValue { $0.streams.count } }

    private init(channel: any Channel, redeliverEverything: Bool) {
        self.channel = channel
        self.redeliverEverything = redeliverEverything
    }

    /// Starts a server on 127.0.0.1, port 0.
    static func start(redeliverEverything: Bool = false) async throws -> FakeRelayServer {
        let box = NIOLockedValueBox<FakeRelayServer?>(nil)
        let channel = try await bindFakeHTTP1Listener { FakeRelayHandler(server: box.withLockedValue { $0! }) }
        let server = FakeRelayServer(channel: channel, redeliverEverything: redeliverEverything)
        box.withLockedValue { $0 = server }
        return server
    }

    func shutdown() async throws {
        let streams = state.withLockedValue { Array($0.streams.values) }
        for stream in streams { stream.close(promise: nil) }
        try await channel.close()
    }

    /// Queues a message with the given envelope (its `gcm.message_id` is set to the new id); returns the id.
    @discardableResult
    func enqueue(_ envelope: (_ id: String) -> [String: JSON]) -> String {
        let (id, event, streams) = state.withLockedValue { state in
            let id = String(state.nextID)
            state.nextID += 1
            let data = JSON(envelope(id)).jsonText
            state.pending.append((id, data))
            state.everything.append((id, data))
            return (id, Self.event(id: id, data: data), Array(state.streams.values))
        }
        for stream in streams { Self.write(event, to: stream) }
        return id
    }

    func sendScenario(to token: String, orderID: Int) async throws -> String {
        enqueue { id in
            var envelope = Scenario.envelope(messageID: id)
            envelope["gcm.notification.orderInfo"] = .string(
                #"{"newOrderStatus": "Novo pedido", "orderId": \#(orderID), "userEmail": "matilde@siecola.com.br", "#
                    + #""infoReason": "Status de pedido"}"#)
            return envelope
        }
    }

    /// Sends a heartbeat comment on every open stream.
    func heartbeat() {
        let streams = state.withLockedValue { Array($0.streams.values) }
        for stream in streams { Self.write(": ping\n\n", to: stream) }
    }

    func interruptStreams() async throws {
        let streams = state.withLockedValue { state in
            defer { state.streams.removeAll() }
            return Array(state.streams.values)
        }
        for stream in streams { try? await stream.close() }
    }

    // MARK: Routes, called by the handler on the connection's event loop.

    fileprivate func handle(
        _ head: HTTPRequestHead, body: ByteBuffer, context: ChannelHandlerContext
    ) -> (HTTPResponseStatus, String)? {
        let authorization = head.headers.first(name: "Authorization") ?? ""
        let path = head.uri.split(separator: "?").first.map(String.init) ?? head.uri
        switch (head.method, path) {
        case (.POST, "/v1/register"):
            guard authorization == "key=\(Self.clientKey)" else { return (.unauthorized, #"{"error":"bad key"}"#) }
            let request = (try? JSON.parse(Data(body.readableBytesView))) ?? .null
            state.withLockedValue { $0.recorded.registrations.append(request) }
            let answer: JSON = ["token": .string(Scenario.token), "secret": .string(Self.secret),
                                "sender_id": .string(Scenario.senderID)]
            return (.ok, answer.jsonText)
        case (.DELETE, "/v1/register"):
            guard authorization == "Bearer \(Self.secret)" else { return (.unauthorized, "{}") }
            state.withLockedValue { $0.recorded.unregistered = true }
            return (.ok, "{}")
        case (.POST, "/v1/ack"):
            guard authorization == "Bearer \(Self.secret)" else { return (.unauthorized, "{}") }
            let ids = (try? JSON.parse(Data(body.readableBytesView)))?["ids"]?.arrayValue?.compactMap(\.stringValue)
            state.withLockedValue { state in
                state.recorded.acknowledged += ids ?? []
                state.pending.removeAll { ids?.contains($0.id) ?? false }
            }
            return (.ok, "{}")
        case (.GET, "/v1/stream"):
            guard authorization == "Bearer \(Self.secret)" else { return (.unauthorized, #"{"error":"bad secret"}"#) }
            openStream(head, context: context)
            return nil
        default:
            return (.notFound, "{}")
        }
    }

    private func openStream(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let lastEventID = head.headers.first(name: "Last-Event-ID")
        let channel = context.channel
        let backlog = state.withLockedValue { state in
            state.recorded.lastEventIDs.append(lastEventID)
            if let lastEventID, let index = state.pending.firstIndex(where: { $0.id == lastEventID }) {
                state.pending.removeFirst(index + 1)
            }
            state.streams[ObjectIdentifier(channel)] = channel
            return redeliverEverything ? state.everything : state.pending
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/event-stream")
        headers.add(name: "Cache-Control", value: "no-cache")
        context.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok,
                                                                           headers: headers))), promise: nil)
        var buffer = context.channel.allocator.buffer(string: ": welcome\n\n")
        for message in backlog { buffer.writeString(Self.event(id: message.id, data: message.data)) }
        context.writeAndFlush(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil)
        channel.closeFuture.whenComplete { [weak self] _ in
            self?.state.withLockedValue { _ = $0.streams.removeValue(forKey: ObjectIdentifier(channel)) }
        }
    }

    private static func event(id: String, data: String) -> String {
        "id: \(id)\ndata: \(data)\n\n"
    }

    private static func write(_ text: String, to channel: any Channel) {
        let buffer = channel.allocator.buffer(string: text)
        channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer)), promise: nil)
    }
}

/// One connection of the fake relay: collects a request, answers it (or keeps it open as a stream).
private final class FakeRelayHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let server: FakeRelayServer
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()

    init(server: FakeRelayServer) {
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.clear()
        case .body(var chunk):
            body.writeBuffer(&chunk)
        case .end:
            guard let head else { return }
            guard let (status, text) = server.handle(head, body: body, context: context) else { return }
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(text.utf8.count))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status,
                                                                 headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: text)))),
                          promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
