import Foundation
import HTTPTypes
import NIOCore
import NIOPosix
import PushRelayHTTP
import PushRelayStore
import Testing
@testable import PushRelayServer

/// `GET /v1/stream` opens on its connection's event loop, without a task: with every thread of Swift's cooperative
/// pool blocked, a stream still opens — its device and project read from the store, its `Last-Event-ID`
/// acknowledged, its backlog read and written. (As an async route it needed the pool for the route and again for the
/// backlog: a reconnection storm after a restart paid both hops per device.) So do an acknowledgement whose secret
/// and a send whose token must be read from the store, topic, condition and device-group sends, and FCM HTTP v1 sends.
// Serialized: two of these tests blocking the pool at once would wait for each other's threads.
@Suite("Routes: streams open, acknowledgements and sends are answered, on the event loop when the store must be read", .serialized)
struct StreamOpeningTests {
    /// What the route answered, handed from the event loop to the test's blocked thread (the semaphore orders them).
    private final class Answered: @unchecked Sendable {
        var result: Result<HTTPServerResponse, any Error>?
        let signal = DispatchSemaphore(value: 0)
    }

    @Test("with the cooperative pool blocked, a stream opens, acknowledges its Last-Event-ID and writes its backlog")
    func opensWithoutThePool() async throws {
        // The device's secret and its project are not in memory (a registration and a send cache neither): both are
        // read from the store.
        let (relay, project, device) = try await Self.relayWithOneDevice()
        let first = try await relay.messageID(#"{"to": "\#(device.token)", "data": {"n": "1"}}"#, key: project.serverKey)
        let second = try await relay.messageID(#"{"to": "\#(device.token)", "data": {"n": "2"}}"#, key: project.serverKey)
        #expect(relay.store.cachedDevice(secret: device.secret) == nil)

        let headers: HTTPFields = [.authorization: "Bearer \(device.secret)", HTTPField.Name("Last-Event-ID")!: first]
        guard let (handle, request) = Self.promisedRoute(relay, .get, "/v1/stream", headers, body: "") else {
            await relay.close()
            return
        }
        let outcome = Self.runWithThePoolBlocked(handle, request, ByteBuffer(), until: "id: \(second)")
        Self.expectRunWhileBlocked(outcome)
        let (answered, written) = (outcome.answered, outcome.written)
        if case .success(let response)? = answered.result { #expect(response.head.status == .ok) }
        #expect(written.contains("id: \(second)"), "the backlog was read and written while the pool was blocked")
        #expect(!written.contains("id: \(first)"), "Last-Event-ID acknowledged the first message")
        let found = try #require(try await relay.store.resolveTokens([device.token]).first ?? nil)
        #expect(try await relay.store.pendingMessages(for: found.id, after: nil, limit: 10).map { "\($0.id)" } == [second])
        await relay.close()
    }

    @Test("with the cooperative pool blocked, an acknowledgement by a secret not in memory is answered")
    func acknowledgesWithoutThePool() async throws {
        let (relay, project, device) = try await Self.relayWithOneDevice()
        let id = try await relay.messageID(#"{"to": "\#(device.token)", "data": {"n": "1"}}"#, key: project.serverKey)
        #expect(relay.store.cachedDevice(secret: device.secret) == nil)
        let answer = Self.answerWithThePoolBlocked(
            relay, .post, "/v1/ack", [.authorization: "Bearer \(device.secret)", .contentType: "application/json"],
            body: #"{"ids": ["\#(id)"]}"#)
        #expect(answer?.status == 200)
        #expect(answer?.text.contains(#""acknowledged":1"#) == true, "\(String(describing: answer))")
        await relay.close()
    }

    @Test("with the cooperative pool blocked, a send to a token not in memory is committed and answered")
    func sendsWithoutThePool() async throws {
        let (relay, project, known) = try await Self.relayWithOneDevice()
        let other = try await relay.registerDevice(project)
        // The first send puts the server key (and its token) in memory; the other device's token is not.
        _ = try await relay.messageID(#"{"to": "\#(known.token)", "data": {"n": "1"}}"#, key: project.serverKey)
        #expect(relay.store.cachedDevices(tokens: [other.token]) == nil)
        let answer = Self.answerWithThePoolBlocked(
            relay, .post, "/fcm/send", [.authorization: "key=\(project.serverKey)", .contentType: "application/json"],
            body: #"{"to": "\#(other.token)", "data": {"n": "2"}}"#)
        #expect(answer?.status == 200)
        #expect(answer?.text.contains(#""success":1"#) == true, "\(String(describing: answer))")
        let found = try #require(try await relay.store.resolveTokens([other.token]).first ?? nil)
        #expect(try await relay.store.pendingMessages(for: found.id, after: nil, limit: 10).count == 1)
        await relay.close()
    }

    @Test("with the cooperative pool blocked, a topic send and a condition send are committed and answered")
    func topicSendsWithoutThePool() async throws {
        let (relay, project, known) = try await Self.relayWithOneDevice()
        // The first send puts the server key in memory.
        _ = try await relay.messageID(#"{"to": "\#(known.token)", "data": {"n": "1"}}"#, key: project.serverKey)
        let headers: HTTPFields = [.authorization: "key=\(project.serverKey)", .contentType: "application/json"]
        for body in [
            #"{"to": "/topics/news", "data": {"n": "2"}}"#,
            #"{"condition": "'news' in topics && 'sport' in topics", "data": {"n": "3"}}"#,
        ] {
            let answer = Self.answerWithThePoolBlocked(relay, .post, "/fcm/send", headers, body: body)
            #expect(answer?.status == 200)
            #expect(answer?.text.contains(#""message_id":"#) == true, "\(String(describing: answer))")
        }
        // Refused on the loop as in a task: a condition every unsubscribed device would match.
        let refused = Self.answerWithThePoolBlocked(
            relay, .post, "/fcm/send", headers, body: #"{"condition": "!('news' in topics)", "data": {"n": "4"}}"#)
        #expect(refused?.status == 400, "\(String(describing: refused))")
        await relay.close()
    }

    @Test("with the cooperative pool blocked, an FCM HTTP v1 send is committed and answered")
    func v1SendsWithoutThePool() async throws {
        let (relay, project, known) = try await Self.relayWithOneDevice()
        let other = try await relay.registerDevice(project)
        try await relay.issueAccessToken("loop-test-token", for: project, keyID: "loop-test")
        let headers: HTTPFields = [.authorization: "Bearer loop-test-token", .contentType: "application/json"]
        let path = "/v1/projects/\(project.project.name)/messages:send"
        // The first send puts the access token in memory; the other device's token is not.
        let first = try await relay.request(
            .post, path, headers: headers, body: #"{"message": {"token": "\#(known.token)", "data": {"n": "1"}}}"#)
        #expect(first.status == 200, "\(first.text)")
        #expect(relay.store.cachedDevices(tokens: [other.token]) == nil)
        let answer = Self.answerWithThePoolBlocked(
            relay, .post, path, headers, body: #"{"message": {"token": "\#(other.token)", "data": {"n": "2"}}}"#)
        #expect(answer?.status == 200)
        #expect(answer?.text.contains(#""name":"projects/\#(project.project.name)/messages/"#) == true, "\(String(describing: answer))")
        let found = try #require(try await relay.store.resolveTokens([other.token]).first ?? nil)
        #expect(try await relay.store.pendingMessages(for: found.id, after: nil, limit: 10).count == 1)
        // Another project's name in the path: refused on the loop as in a task.
        let denied = Self.answerWithThePoolBlocked(
            relay, .post, "/v1/projects/elsewhere/messages:send", headers,
            body: #"{"message": {"token": "\#(other.token)", "data": {"n": "3"}}}"#)
        #expect(denied?.status == 403, "\(String(describing: denied))")
        await relay.close()
    }

    @Test("with the cooperative pool blocked, a device-group send through either API is committed and answered")
    func groupSendsWithoutThePool() async throws {
        let (relay, project, known) = try await Self.relayWithOneDevice()
        let other = try await relay.registerDevice(project)
        let created = try await relay.request(
            .post, "/fcm/notification",
            headers: [
                .authorization: "key=\(project.serverKey)", HTTPField.Name("project_id")!: String(project.project.senderID),
                .contentType: "application/json",
            ],
            body: #"{"operation": "create", "notification_key_name": "pair", "registration_ids": ["\#(known.token)", "\#(other.token)"]}"#)
        let key = try #require(try created.json()["notification_key"] as? String, "\(created.text)")
        try await relay.issueAccessToken("group-loop-token", for: project, keyID: "group-loop")
        let v1Headers: HTTPFields = [.authorization: "Bearer group-loop-token", .contentType: "application/json"]
        let v1Path = "/v1/projects/\(project.project.name)/messages:send"
        // The server key and the access token in memory.
        _ = try await relay.messageID(#"{"to": "\#(known.token)", "data": {"n": "0"}}"#, key: project.serverKey)
        #expect(try await relay.request(
            .post, v1Path, headers: v1Headers, body: #"{"message": {"token": "\#(known.token)"}}"#).status == 200)

        let legacy = Self.answerWithThePoolBlocked(
            relay, .post, "/fcm/send", [.authorization: "key=\(project.serverKey)", .contentType: "application/json"],
            body: #"{"to": "\#(key)", "data": {"n": "1"}}"#)
        #expect(legacy?.status == 200)
        #expect(legacy?.text.contains(#""success":2"#) == true, "\(String(describing: legacy))")
        let v1 = Self.answerWithThePoolBlocked(
            relay, .post, v1Path, v1Headers, body: #"{"message": {"token": "\#(key)", "data": {"n": "2"}}}"#)
        #expect(v1?.status == 200)
        #expect(v1?.text.contains(#""name":"projects/"#) == true, "\(String(describing: v1))")
        let found = try #require(try await relay.store.resolveTokens([other.token]).first ?? nil)
        #expect(try await relay.store.pendingMessages(for: found.id, after: nil, limit: 10).count == 2)
        // A key no group has: refused on the loop as in a task.
        let unknown = Self.answerWithThePoolBlocked(
            relay, .post, "/fcm/send", [.authorization: "key=\(project.serverKey)", .contentType: "application/json"],
            body: #"{"to": "\#(String(key.dropLast(4)) + "AAAA")", "data": {"n": "3"}}"#)
        #expect(unknown?.text.contains("NotRegistered") == true, "\(String(describing: unknown))")
        await relay.close()
    }

    /// A relay with a project and a registered device. An hour between epoch checks: whatever is in memory stays
    /// usable, so what the tests find read from the store is what memory did not hold.
    private static func relayWithOneDevice() async throws -> (RelayHarness, ProjectCredentials, TestDevice) {
        let relay = try RelayHarness(configure: { $0.authRecheckInterval = .seconds(3600) })
        let project = try await relay.createProject()
        return (relay, project, try await relay.registerDevice(project))
    }

    /// The handler of a `.promised` route and the request for it, as the transport would make them; nil (an issue
    /// recorded) when the route is not one.
    private static func promisedRoute(
        _ relay: RelayHarness, _ method: HTTPRequest.Method, _ path: String, _ headers: HTTPFields, body: String
    ) -> (@Sendable (HTTPServerRequest, ByteBuffer, HTTPResponsePromise) -> Void, HTTPServerRequest)? {
        let head = HTTPRequest(method: method, scheme: "http", authority: "relay.test", path: path, headerFields: headers)
        guard case .matched(let handler, _, let parameters, _) = relay.relay.router.route(for: head),
            case .promised(let handle) = handler
        else {
            Issue.record("\(method) \(path) is not an event-loop (.promised) route")
            return nil
        }
        let request = HTTPServerRequest(
            head: head, body: HTTPRequestBody(ByteBuffer(string: body)), pathParameters: parameters,
            remoteAddress: nil, protocolVersion: .http1_1, admission: nil)
        return (handle, request)
    }

    private static func expectRunWhileBlocked(_ outcome: Outcome) {
        #expect(outcome.blockersStarted, "every thread of the pool but the test's was blocked")
        #expect(outcome.poolFull, "a task started meanwhile did not run: the pool was full")
        #expect(outcome.opened, "the route answered while the pool was blocked")
    }

    /// A request to a `.promised` route answered with the pool blocked: its status and body, or nil (issues
    /// recorded).
    private static func answerWithThePoolBlocked(
        _ relay: RelayHarness, _ method: HTTPRequest.Method, _ path: String, _ headers: HTTPFields, body: String
    ) -> (status: Int, text: String)? {
        guard let (handle, request) = promisedRoute(relay, method, path, headers, body: body) else { return nil }
        let outcome = runWithThePoolBlocked(handle, request, ByteBuffer(string: body))
        expectRunWhileBlocked(outcome)
        guard case .success(let response)? = outcome.answered.result, case .bytes(let bytes) = response.body else {
            Issue.record("no answer: \(String(describing: outcome.answered.result))")
            return nil
        }
        return (response.head.status.code, String(buffer: bytes))
    }

    private struct Outcome {
        var blockersStarted: Bool
        var poolFull: Bool
        var opened: Bool
        var answered: Answered
        var written: String
    }

    /// Blocks every thread of the cooperative pool (this one too: the caller's task runs on it), runs the route's
    /// handler on an event loop, waits for its answer and, with a `marker`, starts the stream it answers and waits
    /// until it has written that; then lets the pool go. Synchronous on purpose: the test's own thread is one of the
    /// pool's.
    private static func runWithThePoolBlocked(
        _ handle: @escaping @Sendable (HTTPServerRequest, ByteBuffer, HTTPResponsePromise) -> Void,
        _ request: HTTPServerRequest,
        _ body: ByteBuffer,
        until marker: String? = nil
    ) -> Outcome {
        // Every thread of the pool but this one waits on `release`; this one waits below, synchronously.
        let width = ProcessInfo.processInfo.activeProcessorCount
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        for _ in 0..<(width - 1) {
            Task.detached {
                started.signal()
                release.wait()
            }
        }
        var blockersStarted = true
        // Short bounds throughout: while the pool is blocked every other test of the run waits too.
        for _ in 0..<(width - 1) where started.wait(timeout: .now() + 5) == .timedOut { blockersStarted = false }
        let probe = DispatchSemaphore(value: 0)
        Task.detached { probe.signal() }
        let poolFull = probe.wait(timeout: .now() + 0.2) == .timedOut

        let answered = Answered()
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        loop.execute {
            handle(request, body, HTTPResponsePromise(eventLoop: loop) { result in
                answered.result = result
                answered.signal.signal()
            })
        }
        let opened = blockersStarted && answered.signal.wait(timeout: .now() + 5) == .success
        var written = ""
        if let marker, opened, case .success(let response)? = answered.result, response.head.status == .ok,
            case .detachedStream(let start) = response.body
        {
            let writer = RecordingBodyWriter()
            writer.eventLoop.execute { start(writer) }
            let deadline = Date().addingTimeInterval(5)
            while Date() < deadline, !writer.text.contains(marker) {
                Thread.sleep(forTimeInterval: 0.005)
            }
            written = writer.text
            writer.close()
        }
        for _ in 0..<(width - 1) { release.signal() }

        return Outcome(
            blockersStarted: blockersStarted, poolFull: poolFull, opened: opened, answered: answered, written: written)
    }
}
