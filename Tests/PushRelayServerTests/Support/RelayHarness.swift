import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PushRelayHTTP
import PushRelayStore
import Testing

@testable import PushRelayServer

/// The relay in process: a ``RelayApplication`` on a SQLite store in a temporary directory, requests handed to its
/// router as the transport would (route, body limit, handler, `HTTPError` → status), streams written to a
/// ``RecordingBodyWriter``, and a wall clock the test moves (``ManualWallClock``) for expiry.
///
/// What needs a process, a socket or a real independent peer stays in `EndToEndTests`.
final class RelayHarness: Sendable {
    let directory: URL
    let store: SQLiteStore
    let relay: RelayApplication
    let clock: ManualWallClock

    /// A response as the transport would send it; `text` is the body of a complete response.
    struct Answer: Sendable {
        var status: Int
        var headers: HTTPFields
        var text: String
        var contentType: String? { headers[.contentType] }
        func json() throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not JSON: \(text)")
        }
    }

    init(options: RelayApplication.Options = RelayApplication.Options(), configure: (inout SQLiteStore.Configuration) -> Void = { _ in }) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushrelay-routes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let clock = ManualWallClock()
        self.clock = clock
        var configuration = SQLiteStore.Configuration.relay(directory: directory.path)
        configuration.clock = { clock.now }
        configure(&configuration)
        store = try SQLiteStore(configuration: configuration, logger: Logger(label: "test.store"))
        relay = RelayApplication(store: store, options: options, logger: Logger(label: "test.relay"))
        relay.markReady()
    }

    /// Closes the store and removes the directory.
    func close() async {
        await store.close()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs one request through the router. Streaming bodies are not collected: use ``openStream(secret:)``.
    func request(
        _ method: HTTPRequest.Method,
        _ path: String,
        headers: HTTPFields = [:],
        body: String = "",
        from remoteAddress: SocketAddress? = nil
    ) async throws -> Answer {
        let response = try await respond(method, path, headers: headers, body: body, from: remoteAddress)
        var text = ""
        if case .bytes(let buffer) = response.body { text = String(buffer: buffer) }
        return Answer(status: response.head.status.code, headers: response.head.headerFields, text: text)
    }

    /// The handler's response, as the transport gets it.
    func respond(
        _ method: HTTPRequest.Method,
        _ path: String,
        headers: HTTPFields = [:],
        body: String = "",
        from remoteAddress: SocketAddress? = nil
    ) async throws -> HTTPServerResponse {
        let head = HTTPRequest(method: method, scheme: "http", authority: "relay.test", path: path, headerFields: headers)
        let bodyBuffer = ByteBuffer(string: body)
        switch relay.router.route(for: head) {
        case .notFound:
            return HTTPServerResponse(status: .notFound)
        case .methodNotAllowed:
            return HTTPServerResponse(status: .methodNotAllowed)
        case .matched(let handler, let maxBodyBytes, let parameters, let gate):
            // As the transport does: the gate sees the head first, then 413 before the handler for a body over the
            // route's limit.
            var admission: (any AnyObject & Sendable)?
            switch gate?(head) ?? .allow {
            case .allow: break
            case .admit(let value): admission = value
            case .deny(let response): return response
            case .verify(let check): if let response = await check() { return response }
            }
            if bodyBuffer.readableBytes > maxBodyBytes { return HTTPServerResponse(status: .contentTooLarge) }
            let request = HTTPServerRequest(
                head: head, body: HTTPRequestBody(bodyBuffer), pathParameters: parameters,
                remoteAddress: remoteAddress, protocolVersion: .http2, admission: admission)
            do {
                switch handler {
                case .immediate(let handle): return handle(request, bodyBuffer)
                case .collected(let handle), .async(let handle): return try await handle(request)
                case .promised(let handle):
                    // As the transport runs it: on an event loop, answered when the promise completes.
                    let loop = MultiThreadedEventLoopGroup.singleton.next()
                    return try await withCheckedThrowingContinuation { continuation in
                        let promise = HTTPResponsePromise(eventLoop: loop) { continuation.resume(with: $0) }
                        loop.execute { handle(request, bodyBuffer, promise) }
                    }
                }
            } catch {
                // As the transport answers a handler's error: through the router (the route's format, a store
                // failure translated).
                return relay.router.response(forThrown: error, to: head)
            }
        }
    }

    // MARK: FCM senders and devices

    /// A project created in the store, as `pushrelay project create` does.
    func createProject(_ name: String = "shop") async throws -> ProjectCredentials {
        try await store.createProject(name: name)
    }

    /// A device registered through `POST /v1/register`, as an app does.
    /// Issues the FCM HTTP v1 access token `token` for `project` from a new service-account key `keyID` (its public
    /// key unused: the token goes straight into the store, as `POST /token` would put it there), valid for an hour.
    func issueAccessToken(_ token: String, for project: ProjectCredentials, keyID: String) async throws {
        let key = try await store.addServiceAccountKey(
            project: project.project.name, keyID: keyID, clientEmail: "sender@shop.iam.test",
            publicKeyPEM: "-----BEGIN PUBLIC KEY-----\nunused by this test\n-----END PUBLIC KEY-----\n")
        try await store.issueAccessToken(token, key: key, expiresAt: Date().addingTimeInterval(3600))
    }

    func registerDevice(_ project: ProjectCredentials, app: String = "br.com.siecola.shop") async throws -> TestDevice {
        let answer = try await request(
            .post, "/v1/register", headers: [.authorization: "key=\(project.clientKey)", .contentType: "application/json"],
            body: #"{"project":"\#(project.project.name)","app":"\#(app)","platform":"ios"}"#)
        #expect(answer.status == 200, "\(answer.text)")
        let json = try answer.json()
        return TestDevice(token: try #require(json["token"] as? String), secret: try #require(json["secret"] as? String))
    }

    /// `count` devices registered one after the other.
    func registerDevices(_ project: ProjectCredentials, count: Int) async throws -> [TestDevice] {
        var devices: [TestDevice] = []
        for _ in 0..<count { devices.append(try await registerDevice(project)) }
        return devices
    }

    /// `POST /fcm/send` with the project's server key.
    func send(_ json: String, key: String, contentType: String = "application/json") async throws -> Answer {
        try await request(.post, "/fcm/send", headers: [.authorization: "key=\(key)", .contentType: contentType], body: json)
    }

    /// The per-target results of an accepted send.
    func results(_ json: String, key: String) async throws -> [[String: Any]] {
        let answer = try await send(json, key: key)
        #expect(answer.status == 200, "\(answer.text)")
        return try answer.json()["results"] as? [[String: Any]] ?? []
    }

    /// The one message id of an accepted single-target send.
    func messageID(_ json: String, key: String) async throws -> String {
        try #require(try await results(json, key: key).first?["message_id"] as? String, "not accepted: \(json)")
    }

    /// Opens `GET /v1/stream` for the device; the stream writes into the returned writer until ``RecordingBodyWriter/close()``.
    func openStream(secret: String, lastEventID: String? = nil) async throws -> RecordingBodyWriter {
        var headers: HTTPFields = [.authorization: "Bearer \(secret)"]
        if let lastEventID { headers[HTTPField.Name("Last-Event-ID")!] = lastEventID }
        let response = try await respond(.get, "/v1/stream", headers: headers)
        #expect(response.head.status == .ok)
        let writer = RecordingBodyWriter()
        switch response.body {
        case .detachedStream(let start): writer.eventLoop.execute { start(writer) }
        case .stream(let run): Task { try? await run(writer) }
        case .bytes, .empty: Issue.record("not a stream: \(response.head.status)")
        }
        try await writer.waitFor("the stream to start") { $0.contains(": connected") }
        return writer
    }
}

/// A registered device's token and secret.
struct TestDevice: Sendable {
    var token: String
    var secret: String
}

/// The wall clock the store reads (expiry, ids): now unless the test moved it.
final class ManualWallClock: Sendable {
    private let offset = NIOLockedValueBox<TimeInterval>(0)
    var now: Date { Date().addingTimeInterval(offset.withLockedValue { $0 }) }
    /// Moves the clock forward.
    func advance(by duration: Duration) {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        offset.withLockedValue { $0 += seconds }
    }
}

/// A streaming response body written into memory, on a real event loop: every write completes at once; the test
/// plays the peer leaving with ``close()``.
final class RecordingBodyWriter: HTTPResponseBodyWriter {
    private struct State {
        var text = ""
        var finished = false
        var closed = false
        var closeCallbacks: [@Sendable () -> Void] = []
    }

    private let state = NIOLockedValueBox(State())
    let eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()
    let allocator = ByteBufferAllocator()

    func write(_ buffer: ByteBuffer, completion: @escaping @Sendable ((any Error)?) -> Void) {
        let accepted = state.withLockedValue { state -> Bool in
            guard !state.closed, !state.finished else { return false }
            state.text += String(buffer: buffer)
            return true
        }
        completion(accepted ? nil : HTTPTransportError.streamClosed())
    }

    func finish() { state.withLockedValue { $0.finished = true } }

    func fail() { state.withLockedValue { $0.finished = true } }

    func onClose(_ callback: @escaping @Sendable () -> Void) {
        let closed = state.withLockedValue { state -> Bool in
            if state.closed { return true }
            state.closeCallbacks.append(callback)
            return false
        }
        if closed { eventLoop.execute(callback) }
    }

    /// The peer goes away: the close callbacks run on the event loop.
    func close() {
        let callbacks = state.withLockedValue { state -> [@Sendable () -> Void] in
            state.closed = true
            defer { state.closeCallbacks = [] }
            return state.closeCallbacks
        }
        for callback in callbacks { eventLoop.execute(callback) }
    }

    /// Everything written so far.
    var text: String { state.withLockedValue { $0.text } }
    /// Whether the relay ended the body.
    var isFinished: Bool { state.withLockedValue { $0.finished } }
    /// The complete events written so far.
    var events: [StreamEvent] { StreamEvent.parse(text) }

    /// Waits (polling, at most `timeout`) until the text written satisfies `condition`.
    @discardableResult
    func waitFor(timeout: Duration = .seconds(20), _ what: String, _ condition: (String) -> Bool) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let text = self.text
            if condition(text) { return text }
            try await Task.sleep(for: .milliseconds(5))
        }
        Issue.record("timed out waiting for \(what); written so far:\n\(text)")
        throw CancellationError()
    }

    /// Waits until the events written satisfy `condition`.
    @discardableResult
    func waitForEvents(_ what: String, _ condition: ([StreamEvent]) -> Bool) async throws -> [StreamEvent] {
        StreamEvent.parse(try await waitFor(what) { condition(StreamEvent.parse($0)) })
    }
}

/// One server-sent event (`id:` and `data:`); comments are skipped.
struct StreamEvent: Equatable, Sendable {
    var id: String?
    var data: String

    func json() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any])
    }

    static func parse(_ text: String) -> [StreamEvent] {
        var events: [StreamEvent] = []
        for block in text.components(separatedBy: "\n\n").dropLast() {
            var id: String?
            var data: [String] = []
            for line in block.split(separator: "\n", omittingEmptySubsequences: true) {
                if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
                if line.hasPrefix("data: ") { data.append(String(line.dropFirst(6))) }
            }
            if id != nil || !data.isEmpty { events.append(StreamEvent(id: id, data: data.joined(separator: "\n"))) }
        }
        return events
    }
}
