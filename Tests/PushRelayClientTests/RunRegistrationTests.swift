import Foundation
import Testing

@testable import PushRelayClient

/// The registration ``PushClient/run(onMessage:)`` makes for a client without credentials is retried as the stream
/// is (backoff, `Retry-After`, attempts), and stop() ends its wait; ``PushClient/register()`` stays one attempt.
/// Against ``FakeStreamAnswerRelay``, over each transport.
@Suite("run()'s own registration")
struct RunRegistrationTests {
    typealias Transport = StreamAnswerTests.Transport

    /// A registration, no credentials; the backoff of ``StreamAnswerTests`` (20 ms doubling to 100 ms, no jitter),
    /// far below the `Retry-After`s here.
    static func configuration(_ relay: FakeStreamAnswerRelay) -> PushClientConfiguration {
        var configuration = PushClientConfiguration(
            serverURL: relay.serverURL,
            registration: .init(project: "shop", app: "br.com.siecola.shop", platform: "linux", clientKey: "k"))
        configuration.backoff = StreamAnswerTests.configuration(relay).backoff
        configuration.heartbeatTimeout = .seconds(20)
        configuration.connectTimeout = .seconds(5)
        return configuration
    }

    @Test("run() without credentials: registration refused 429 with Retry-After: 1 is tried again after 1 s",
          arguments: Transport.allCases)
    func refusedRegistrationIsRetried(_ transport: Transport) async throws {
        let relay = try await FakeStreamAnswerRelay.start(
            [.eventStream(eventID: "1603214613006763")],
            registration: [.refuse(status: 429, retryAfter: "1"), .credentials(token: "token-1", secret: "secret-1")])
        let client = try StreamAnswerTests.client(Self.configuration(relay), over: transport)
        let states = client.states()
        let handled = HandledMessages()
        var seen: [PushClientState] = []
        try await PushClientNetworkTests.withRunningClient(client, handled: handled) {
            seen = try await states.until("connected") { if case .connected = $0 { true } else { false } }
            try await withTimeout(20, "the message handled") {
                while await handled.ids.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            }
        }
        #expect(seen == [
            .idle, .registering, .reconnecting(attempt: 1, after: .seconds(1)), .registering,
            .registered(token: "token-1"), .connecting, .connected(token: "token-1"),
        ])
        #expect(await handled.ids == ["1603214613006763"])
        #expect(relay.registerRequests == 2)
        #expect(client.credentials?.secret == "secret-1")
        await client.transport.shutdown()
        await relay.shutdown()
    }

    @Test("a captive portal answers the registration (200 text/html): run() tries again with the backoff",
          arguments: Transport.allCases)
    func portalRegistrationIsRetried(_ transport: Transport) async throws {
        let relay = try await FakeStreamAnswerRelay.start(
            [.eventStream(eventID: "1603214613006763")],
            registration: [.page(contentType: "text/html", body: "<html>sign in</html>"),
                           .credentials(token: "token-1", secret: "secret-1")])
        let client = try StreamAnswerTests.client(Self.configuration(relay), over: transport)
        let states = client.states()
        var seen: [PushClientState] = []
        try await PushClientNetworkTests.withRunningClient(client) {
            seen = try await states.until("connected") { if case .connected = $0 { true } else { false } }
        }
        #expect(seen.contains(.reconnecting(attempt: 1, after: .milliseconds(20))), "\(seen)")
        #expect(!seen.contains { if case .failed = $0 { true } else { false } }, "\(seen)")
        #expect(relay.registerRequests == 2)
        await client.transport.shutdown()
        await relay.shutdown()
    }

    @Test("stop() while run()'s registration waits out a Retry-After (an hour): run() returns without waiting",
          arguments: Transport.allCases)
    func stopDuringRegistrationWait(_ transport: Transport) async throws {
        let relay = try await FakeStreamAnswerRelay.start(
            [.eventStream(eventID: "1")], registration: [.refuse(status: 503, retryAfter: "3600")])
        let client = try StreamAnswerTests.client(Self.configuration(relay), over: transport)
        let reconnection = try await withTimeout(20, "run() to return after stop()") {
            try await PushClientNetworkTests.firstReconnection(of: client)
        }
        #expect(reconnection.attempt == 1 && reconnection.delay == BackoffPolicy().maximumRetryAfter)
        #expect(client.lastError?.retryAfter == .seconds(3600))
        #expect(client.state == .idle)
        #expect(relay.registerRequests == 1 && relay.streamRequests.isEmpty)
        await client.transport.shutdown()
        await relay.shutdown()
    }

    @Test("run()'s registration refused 401 (a wrong client key): run() fails at once with unauthorized",
          arguments: Transport.allCases)
    func refusedClientKeyIsFinal(_ transport: Transport) async throws {
        let relay = try await FakeStreamAnswerRelay.start(
            [.eventStream(eventID: "1")], registration: [.refuse(status: 401, retryAfter: nil)])
        let client = try StreamAnswerTests.client(Self.configuration(relay), over: transport)
        await #expect {
            try await withTimeout(20, "run() to fail") { try await client.run() }
        } throws: { ($0 as? PushClientError)?.code == .unauthorized }
        guard case .failed = client.state else {
            Issue.record("expected failed, got \(client.state)")
            return
        }
        #expect(relay.registerRequests == 1 && relay.streamRequests.isEmpty)
        await client.transport.shutdown()
        await relay.shutdown()
    }

    @Test("register() is one attempt: refused 503 with Retry-After, it throws the wait and does not ask again",
          arguments: Transport.allCases)
    func registerIsOneAttempt(_ transport: Transport) async throws {
        let relay = try await FakeStreamAnswerRelay.start(
            [.eventStream(eventID: "1")],
            registration: [.refuse(status: 503, retryAfter: "30"), .credentials(token: "t", secret: "s")])
        let client = try StreamAnswerTests.client(Self.configuration(relay), over: transport)
        await #expect {
            try await client.register()
        } throws: { error in
            guard let error = error as? PushClientError else { return false }
            return error.code == .httpStatus && error.status == 503 && error.retryAfter == .seconds(30)
        }
        #expect(relay.registerRequests == 1)
        #expect(client.credentials == nil)
        #expect(client.lastError?.retryAfter == .seconds(30))
        guard case .failed = client.state else {
            Issue.record("expected failed, got \(client.state)")
            return
        }
        await client.transport.shutdown()
        await relay.shutdown()
    }
}
