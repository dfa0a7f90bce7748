import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOPosix
import Synchronization
import TestSupport

@testable import PushRelayHTTP

/// Counters a test reads while the test routes run.
final class TestRouteProbe: Sendable {
    private let state = Mutex<(floodBytesWritten: Int, streamsClosed: Int, closeCallbacks: Int, cancelled: Int)>(
        (0, 0, 0, 0))

    var floodBytesWritten: Int { state.withLock { $0.floodBytesWritten } }
    var streamsClosed: Int { state.withLock { $0.streamsClosed } }
    func addFlood(_ count: Int) { state.withLock { $0.floodBytesWritten += count } }
    func streamClosed() { state.withLock { $0.streamsClosed += 1 } }
    /// How many `onClose` callbacks have run.
    var closeCallbacks: Int { state.withLock { $0.closeCallbacks } }
    func closeCallbackRan() { state.withLock { $0.closeCallbacks += 1 } }
    /// How many `/slow` handlers saw their task cancelled.
    var handlersCancelled: Int { state.withLock { $0.cancelled } }
    func handlerCancelled() { state.withLock { $0.cancelled += 1 } }

    private let parked = Mutex<[HTTPResponsePromise]>([])
    /// Keeps a `/deferred` request's promise until the test answers it.
    func park(_ promise: HTTPResponsePromise) { parked.withLock { $0.append(promise) } }
    /// Answers the oldest parked `/deferred` request with `body`; false when none is parked.
    @discardableResult
    func answerParked(_ body: String) -> Bool {
        guard let promise = parked.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { return false }
        promise.succeed(HTTPServerResponse(status: .ok, body: .bytes(ByteBuffer(string: body))))
        return true
    }
}

/// An in-process `HTTPServer` on 127.0.0.1:0 with the routes the transport tests use.
struct TestServer {
    let server: HTTPServer
    let port: Int
    let probe: TestRouteProbe

    /// Bytes of the `/flood` route: far more than any buffer on the way, so only back-pressure stops it.
    static let floodTotal = 64 * 1024 * 1024

    static func start(configuration: HTTPServer.Configuration = .init()) async throws -> TestServer {
        let probe = TestRouteProbe()
        var logger = Logger(label: "test.http")
        logger.logLevel = .warning
        let server = HTTPServer(
            configuration: configuration,
            listeners: [.init(host: "127.0.0.1", port: 0)],
            responder: makeRouter(probe: probe),
            logger: logger)
        let addresses = try await server.start()
        return TestServer(server: server, port: addresses[0].port!, probe: probe)
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    static func makeRouter(probe: TestRouteProbe) -> HTTPRouter {
        let router = HTTPRouter()
        router.add(.get, "/healthz", .immediate { _, _ in
            HTTPServerResponse(status: .ok, headerFields: [.contentType: "application/json"],
                               body: .bytes(ByteBuffer(string: #"{"status":"ok"}"#)))
        })
        // A 202 whose handler set connection-specific fields, which HTTP/2 forbids (the transport leaves them out there),
        // beside one of its own.
        router.add(.get, "/connection-fields", .immediate { _, _ in
            HTTPServerResponse(
                status: .accepted,
                headerFields: [
                    .connection: "close", HTTPField.Name("Keep-Alive")!: "timeout=5", .transferEncoding: "identity",
                    .upgrade: "h2c", HTTPField.Name("Proxy-Connection")!: "keep-alive", HTTPField.Name("X-Kept")!: "yes",
                ],
                body: .bytes(ByteBuffer(string: "done")))
        })
        // Answers after 30 s, unless its task is cancelled (the client reset the stream or left): counted.
        router.add(.get, "/slow", .collected { _ in
            do {
                try await Task.sleep(for: .seconds(30))
            } catch {
                probe.handlerCancelled()
                throw error
            }
            return HTTPServerResponse(status: .ok)
        })
        // Answers after 300 ms (a client's half-close arrives while it waits).
        router.add(.get, "/delayed", .collected { _ in
            try await Task.sleep(for: .milliseconds(300))
            return HTTPServerResponse(status: .ok, headerFields: [.contentType: "text/plain"], body: .bytes(ByteBuffer(string: "late")))
        })
        // Echoes the body; 1 KiB limit.
        router.add(.post, "/echo", maxBodyBytes: 1024, .immediate { _, body in
            HTTPServerResponse(status: .ok, body: .bytes(body))
        })
        // Same, read by an async handler from the streamed body.
        router.add(.post, "/echo-async", maxBodyBytes: 1024, .async { request in
            let body = try await request.body.collect(upTo: 1024)
            return HTTPServerResponse(status: .ok, body: .bytes(body))
        })
        // Same, with the body collected by the transport before the async handler starts.
        router.add(.post, "/echo-collected", maxBodyBytes: 1024, .collected { request in
            let body = try await request.body.collect(upTo: 1024)
            return HTTPServerResponse(status: .ok, body: .bytes(body))
        })
        // Up to 1 MiB collected by the transport; answers with the body's size (flow-control tests).
        router.add(.post, "/upload", maxBodyBytes: 1024 * 1024, .collected { request in
            let body = try await request.body.collect(upTo: 1024 * 1024)
            return HTTPServerResponse(status: .ok, body: .bytes(ByteBuffer(string: "\(body.readableBytes)")))
        })
        // Same, answered from another thread through the promise (the message path's way: no task).
        router.add(.post, "/echo-promised", maxBodyBytes: 1024, .promised { _, body, promise in
            DispatchQueue.global().async { promise.succeed(HTTPServerResponse(status: .ok, body: .bytes(body))) }
        })
        // The echo routes again with an error renderer (`{"error":<status>}` as JSON): the transport's 413 and the
        // plain HTTPErrors handlers throw take the route's format; an error with its own Content-Type does not.
        let json: HTTPErrorRenderer = HTTPRouter.errors { error in
            HTTPServerResponse(
                status: error.status, headerFields: [.contentType: "application/json"],
                body: .bytes(ByteBuffer(string: "{\"error\":\(error.status.code)}")))
        }
        router.add(.post, "/json/echo", maxBodyBytes: 1024, errors: json, .immediate { _, body in
            HTTPServerResponse(status: .ok, body: .bytes(body))
        })
        router.add(.post, "/json/echo-async", maxBodyBytes: 1024, errors: json, .async { request in
            HTTPServerResponse(status: .ok, body: .bytes(try await request.body.collect(upTo: 1024)))
        })
        router.add(.post, "/json/echo-collected", maxBodyBytes: 1024, errors: json, .collected { request in
            HTTPServerResponse(status: .ok, body: .bytes(try await request.body.collect(upTo: 1024)))
        })
        router.add(.post, "/json/echo-promised", maxBodyBytes: 1024, errors: json, .promised { _, body, promise in
            promise.succeed(HTTPServerResponse(status: .ok, body: .bytes(body)))
        })
        router.add(.get, "/json/fail", errors: json, .async { _ in throw HTTPError(.badRequest, "nope") })
        router.add(.get, "/json/fail-promised", errors: json, .promised { _, _, promise in
            promise.fail(HTTPError(.conflict, "nope"))
        })
        router.add(.get, "/json/fail-own", errors: json, .async { _ in
            throw HTTPError(.badRequest, "{\"own\":true}", headerFields: [.contentType: "application/json"])
        })
        // A gate that hands the handler what it found (`X-Pass`'s value), and lets other requests through bare.
        let admitting: HTTPGate = { head in
            head.headerFields[HTTPField.Name("X-Pass")!].map { .admit(Admitted(text: "admitted " + $0)) } ?? .allow
        }
        router.add(.post, "/admitted", maxBodyBytes: 1024, gate: admitting, .immediate { request, _ in
            let text = (request.admission as? Admitted)?.text ?? "none"
            return HTTPServerResponse(status: .ok, body: .bytes(ByteBuffer(string: text)))
        })
        router.add(.post, "/admitted-promised", maxBodyBytes: 1024, gate: admitting, .promised { request, _, promise in
            let text = (request.admission as? Admitted)?.text ?? "none"
            promise.succeed(HTTPServerResponse(status: .ok, body: .bytes(ByteBuffer(string: text))))
        })
        // A gate that refuses `X-Gate: deny` at once, checks `X-Gate: check-deny` / `check-allow` off the loop (a
        // refusal, or nothing), and lets other requests through: the echo behind it.
        let checking: HTTPGate = { head in
            switch head.headerFields[HTTPField.Name("X-Gate")!] {
            case "deny": return .deny(HTTPServerResponse(status: .forbidden))
            case "check-deny": return .verify { HTTPServerResponse(status: .forbidden) }
            case "check-allow": return .verify { nil }
            default: return .allow
            }
        }
        router.add(.post, "/gated-echo", maxBodyBytes: 1024, gate: checking, .immediate { _, body in
            HTTPServerResponse(status: .ok, body: .bytes(body))
        })
        // Parks its promise in the probe; the test answers it (`answerParked`).
        router.add(.post, "/deferred", maxBodyBytes: 1024, .promised { _, _, promise in probe.park(promise) })
        router.add(.get, "/fail", .async { _ in throw HTTPError(.badRequest, "nope") })
        // A failed promise answers like a thrown error.
        router.add(.get, "/fail-promised", .promised { _, _, promise in
            DispatchQueue.global().async { promise.fail(HTTPError(.badRequest, "nope")) }
        })
        // `count` events, one every `interval` ms.
        router.add(.get, "/events", .async { request in
            let count = Int(request.queryParameter("count") ?? "") ?? 5
            let interval = Int(request.queryParameter("interval") ?? "") ?? 20
            return HTTPServerResponse(
                status: .ok, headerFields: [.contentType: "text/event-stream"],
                body: .stream { writer in
                    for index in 0..<count {
                        try await writer.write(ByteBuffer(string: "data: event \(index)\n\n"))
                        try await Task.sleep(for: .milliseconds(interval))
                    }
                })
        })
        // Writes until the peer goes away or `floodTotal` bytes are out; counts what `write` accepted.
        router.add(.get, "/flood", .immediate { _, _ in
            HTTPServerResponse(status: .ok, body: .stream { writer in
                let chunk = ByteBuffer(repeating: UInt8(ascii: "x"), count: 16 * 1024)
                var written = 0
                while written < floodTotal {
                    try await writer.write(chunk)
                    written += chunk.readableBytes
                    probe.addFlood(chunk.readableBytes)
                }
            })
        })
        // Holds the stream open until the peer leaves or the server drains.
        router.add(.get, "/hold", .immediate { _, _ in
            HTTPServerResponse(status: .ok, body: .stream { writer in
                try await writer.write(ByteBuffer(string: "open\n"))
                await writer.waitUntilClosed()
                probe.streamClosed()
            })
        })
        // Like /hold, but learns of the close through `onClose` (no task waits on the close).
        router.add(.get, "/hold-callback", .immediate { _, _ in
            HTTPServerResponse(status: .ok, body: .stream { writer in
                try await writer.write(ByteBuffer(string: "open\n"))
                let (closed, continuation) = AsyncStream<Void>.makeStream()
                writer.onClose {
                    probe.closeCallbackRan()
                    continuation.finish()
                }
                for await _ in closed {}
                probe.streamClosed()
            })
        })
        return router
    }
}

enum ExternalPeer {
    /// Runs `arguments` (the first is looked up in PATH) and waits without blocking a concurrency thread.
    static func run(_ arguments: [String], stdin: String? = nil, timeout: Duration = .seconds(60)) async throws
        -> ChildProcessResult
    {
        try await ChildProcess.run(arguments[0], Array(arguments.dropFirst()), standardInput: stdin, timeout: timeout)
    }
}

/// What the test gate hands its handler (``HTTPGateDecision/admit(_:)`` takes an object).
final class Admitted: Sendable {
    let text: String

    init(text: String) {
        self.text = text
    }
}
