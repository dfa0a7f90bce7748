import Foundation
import Logging
import PushRelayHTTP
import Testing

@testable import PushRelayClient
@testable import PushRelayClientNIO

/// What the client makes of the stream's answer head, over each transport against ``FakeStreamAnswerRelay``: a
/// refusal's `Retry-After` sets the reconnection delay, a `200` that is not `text/event-stream` is refused, and an
/// event stream works as before. Before, the transports handed the client only the status.
@Suite("The stream's answer head, over each transport")
struct StreamAnswerTests {
    enum Transport: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// The default NIO transport: HTTP/2 with prior knowledge on `http://`.
        case http2
        /// Its HTTP/1.1 fallback.
        case http1
        /// URLSession (FoundationNetworking's data delegate on Linux, `bytes(for:)` on Apple platforms).
        case urlSession

        var testDescription: String { rawValue }

        func make(_ configuration: PushClientConfiguration) throws -> any PushTransport {
            switch self {
            case .http2: try HTTP2Transport(configuration: configuration)
            case .http1: try HTTP1Transport(configuration: configuration)
            case .urlSession: try URLSessionTransport(configuration: configuration)
            }
        }

        /// The protocol the fake must have seen, when it is known.
        var expectedProtocol: HTTPProtocolVersion? {
            switch self {
            case .http2: .http2
            case .http1: .http1_1
            case .urlSession: nil
            }
        }
    }

    /// A backoff far below the fake's `Retry-After`, without jitter: a delay of seconds can only be the server's.
    static func client(_ relay: FakeStreamAnswerRelay, over transport: Transport) throws -> PushClient {
        var configuration = PushClientConfiguration(
            serverURL: relay.serverURL, credentials: PushCredentials(token: "token", secret: "secret"))
        configuration.backoff = BackoffPolicy(base: .milliseconds(20), maximum: .milliseconds(100), jitter: .none)
        configuration.heartbeatTimeout = .seconds(20)
        configuration.connectTimeout = .seconds(5)
        var logger = Logger(label: "test.client")
        logger.logLevel = .critical
        return try PushClient(configuration: configuration, transport: transport.make(configuration), logger: logger)
    }

    @Test("503 with Retry-After: 2 on the stream: reconnecting is published with a delay of at least 2 s",
          arguments: Transport.allCases)
    func retryAfterOnRefusal(_ transport: Transport) async throws {
        let relay = try await FakeStreamAnswerRelay.start([
            .refuse(status: 503, retryAfter: "2"), .eventStream(eventID: "1603214613006763"),
        ])
        let client = try Self.client(relay, over: transport)
        let states = client.states()
        var published: PushClientState?
        try await PushClientNetworkTests.withRunningClient(client) {
            // The client is stopped as soon as it says how long it waits: nothing here waits the 2 s.
            published = try await states.until("a reconnection") {
                if case .reconnecting = $0 { true } else { false }
            }.last
        }
        guard case .reconnecting(let attempt, let delay) = published else {
            Issue.record("expected reconnecting, got \(String(describing: published))")
            return
        }
        #expect(attempt == 1)
        #expect(delay >= .seconds(2))
        #expect(delay <= BackoffPolicy().maximumRetryAfter)
        if let expected = transport.expectedProtocol { #expect(relay.streamRequests.first == expected) }
        await client.transport.shutdown()
        await relay.shutdown()
    }

    @Test("200 with Content-Type text/html: run() fails with invalidResponse naming the type, never connected",
          arguments: Transport.allCases)
    func htmlIsNotAnEventStream(_ transport: Transport) async throws {
        let relay = try await FakeStreamAnswerRelay.start([
            .page(contentType: "text/html; charset=utf-8",
                  body: "<!DOCTYPE html><html><title>Wi-Fi sign-in</title></html>"),
        ])
        let client = try Self.client(relay, over: transport)
        let states = client.states()
        var failure: (any Error)?
        do {
            try await withTimeout(20, "run() to fail") { try await client.run() }
        } catch {
            failure = error
        }
        let error = try #require(failure as? PushClientError, "\(String(describing: failure))")
        #expect(error.code == .invalidResponse)
        #expect(error.message.contains("text/html"), "\(error.message)")
        let seen = try await states.until("failed") { if case .failed = $0 { true } else { false } }
        #expect(!seen.contains { if case .connected = $0 { true } else { false } })
        if let expected = transport.expectedProtocol { #expect(relay.streamRequests == [expected]) }
        await client.transport.shutdown()
        await relay.shutdown()
    }

    @Test("200 text/event-stream: the client connects and the message arrives, as before",
          arguments: Transport.allCases)
    func eventStreamStillWorks(_ transport: Transport) async throws {
        let relay = try await FakeStreamAnswerRelay.start([.eventStream(eventID: "1603214613006763")])
        let client = try Self.client(relay, over: transport)
        let states = client.states()
        let handled = HandledMessages()
        try await PushClientNetworkTests.withRunningClient(client, handled: handled) {
            _ = try await states.until("connected") { if case .connected = $0 { true } else { false } }
            try await withTimeout(20, "the message handled") {
                while await handled.ids.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            }
        }
        #expect(await handled.ids == ["1603214613006763"])
        if let expected = transport.expectedProtocol { #expect(relay.streamRequests == [expected]) }
        await client.transport.shutdown()
        await relay.shutdown()
    }
}
