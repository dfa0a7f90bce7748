import Foundation
import Logging
import PushRelayHTTP
import Testing

@testable import PushRelayClient
@testable import PushRelayClientNIO

/// What the client makes of the stream's answer head, over each transport against ``FakeStreamAnswerRelay``: a
/// refusal's `Retry-After` sets the reconnection delay, a `200` that is not an event stream (a captive portal's
/// page) is retried with the backoff and never taken for an open stream, and an event stream works as before.
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
    static func configuration(_ relay: FakeStreamAnswerRelay) -> PushClientConfiguration {
        var configuration = PushClientConfiguration(
            serverURL: relay.serverURL, credentials: PushCredentials(token: "token", secret: "secret"))
        configuration.backoff = BackoffPolicy(base: .milliseconds(20), maximum: .milliseconds(100), jitter: .none)
        configuration.heartbeatTimeout = .seconds(20)
        configuration.connectTimeout = .seconds(5)
        return configuration
    }

    static func client(
        _ configuration: PushClientConfiguration, over transport: Transport
    ) throws -> PushClient {
        try client(configuration, transport: transport.make(configuration))
    }

    static func client(_ configuration: PushClientConfiguration, transport: any PushTransport) throws -> PushClient {
        var logger = Logger(label: "test.client")
        logger.logLevel = .critical
        return try PushClient(configuration: configuration, transport: transport, logger: logger)
    }

    static func client(_ relay: FakeStreamAnswerRelay, over transport: Transport) throws -> PushClient {
        try client(configuration(relay), over: transport)
    }

    @Test("503 with Retry-After: 2 on the stream: reconnecting is published with a delay of at least 2 s",
          arguments: Transport.allCases)
    func retryAfterOnRefusal(_ transport: Transport) async throws {
        let relay = try await FakeStreamAnswerRelay.start([
            .refuse(status: 503, retryAfter: "2"), .eventStream(eventID: "1603214613006763"),
        ])
        let client = try Self.client(relay, over: transport)
        // The client is stopped as soon as it says how long it waits: nothing here waits the 2 s.
        let (attempt, delay) = try await PushClientNetworkTests.firstReconnection(of: client)
        #expect(attempt == 1)
        #expect(delay >= .seconds(2))
        #expect(delay <= BackoffPolicy().maximumRetryAfter)
        if let expected = transport.expectedProtocol { #expect(relay.streamRequests.first == expected) }
        await client.transport.shutdown()
        await relay.shutdown()
    }

    /// A captive portal's page: with its own `Content-Type`, or with none (judged by its first bytes).
    static let portalPages: [String?] = ["text/html; charset=utf-8", nil]

    @Test("a captive portal's 200 is retried, the backoff growing, never connected; maximumAttempts ends it",
          arguments: Transport.allCases, portalPages)
    func portalIsRetried(_ transport: Transport, contentType: String?) async throws {
        let relay = try await FakeStreamAnswerRelay.start([
            .page(contentType: contentType, body: "<!DOCTYPE html><html><title>Wi-Fi sign-in</title></html>"),
        ])
        var configuration = Self.configuration(relay)
        configuration.backoff.maximumAttempts = 3
        let client = try Self.client(configuration, over: transport)
        let states = client.states()
        let error = try await failure(ofRunning: client, "run() to give up")
        #expect(error.code == .gaveUp, "\(error)")
        let last = try #require(client.lastError)
        #expect(last.code == .invalidResponse)
        #expect(error.message.contains("3 attempts") && error.message.contains("invalidResponse"), "\(error.message)")
        let why = contentType == nil ? "it begins \"<!DOCTYPE html>" : "\"text/html; charset=utf-8\""
        #expect(last.message.contains(why), "\(last.message)")
        let seen = try await states.until("failed") { if case .failed = $0 { true } else { false } }
        #expect(!seen.contains { if case .connected = $0 { true } else { false } })
        // Each page is an attempt: the backoff (20 ms doubling, no jitter) grows.
        let waits = seen.compactMap { state -> Duration? in
            if case .reconnecting(_, let delay) = state { delay } else { nil }
        }
        #expect(waits == [.milliseconds(20), .milliseconds(40), .milliseconds(80)])
        #expect(relay.streamRequests.count == 4)
        if let expected = transport.expectedProtocol { #expect(relay.streamRequests.allSatisfy { $0 == expected }) }
        await client.transport.shutdown()
        await relay.shutdown()
    }

    @Test("a captive portal's page, then the relay (the user signed in): the client connects and the message arrives",
          arguments: Transport.allCases, portalPages)
    func portalThenRelay(_ transport: Transport, contentType: String?) async throws {
        let relay = try await FakeStreamAnswerRelay.start([
            .page(contentType: contentType, body: "<html><title>Wi-Fi sign-in</title></html>"),
            .eventStream(eventID: "1603214613006763"),
        ])
        let client = try Self.client(relay, over: transport)
        let states = client.states()
        let handled = HandledMessages()
        var seen: [PushClientState] = []
        try await PushClientNetworkTests.withRunningClient(client, handled: handled) {
            seen = try await states.until("connected") { if case .connected = $0 { true } else { false } }
            try await withTimeout(20, "the message handled") {
                while await handled.ids.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            }
        }
        #expect(await handled.ids == ["1603214613006763"])
        let reconnections = seen.filter { if case .reconnecting = $0 { true } else { false } }
        #expect(reconnections == [.reconnecting(attempt: 1, after: .milliseconds(20))], "\(seen)")
        // Connected once, after the page: a page is never taken for an open stream.
        #expect(seen.filter { if case .connected = $0 { true } else { false } }.count == 1, "\(seen)")
        #expect(client.lastError == nil)
        #expect(relay.streamRequests.count == 2)
        await client.transport.shutdown()
        await relay.shutdown()
    }

    @Test("run()'s failures: a page that is not an event stream may pass; refusals and configuration errors do not")
    func failureClasses() {
        for code in [PushClientError.Code.invalidResponse, .httpStatus, .connectionClosed, .bufferLimitExceeded] {
            let error = PushClientError(code: code, message: "m")
            #expect(PushClient.failure(for: error) == .transient(error.description))
        }
        for code in [PushClientError.Code.unauthorized, .notRegistered, .notFound, .invalidConfiguration, .invalidFile,
                     .tlsNotConfigured] {
            #expect(PushClient.failure(for: PushClientError(code: code, message: "m")) == .permanent("m"))
        }
        let silent = PushClientError(code: .heartbeatTimeout, message: "m")
        #expect(PushClient.failure(for: silent) == .heartbeatTimeout)
    }

    @Test("every relay refuses 503 with Retry-After (30 s, 1 h): the client waits the shortest, then tries its relay",
          arguments: Transport.allCases)
    func failoverWaitsTheShortest(_ transport: Transport) async throws {
        let a = try await FakeStreamAnswerRelay.start([.refuse(status: 503, retryAfter: "30")])
        let b = try await FakeStreamAnswerRelay.start([.refuse(status: 503, retryAfter: "3600")])
        var configuration = Self.configuration(a)
        configuration.fallbackServerURLs = [b.serverURL]
        let failover = try FailoverTransport(configuration: configuration) { try transport.make($0) }
        let client = try Self.client(configuration, transport: failover)
        // Stopped as soon as the client says how long it waits: nothing here waits the 30 s.
        let (attempt, delay) = try await PushClientNetworkTests.firstReconnection(of: client)
        #expect(attempt == 1)
        // a's 30 s, counted from its answer and rounded up to whole seconds: more than the backoff (at most 100 ms),
        // and not b's hour. (30 s, not 2: what is left of a's wait when b has answered shrinks with any stall of this
        // machine, and a stall of 2 s has been seen under CI's load.)
        #expect(delay > .milliseconds(100) && delay <= .seconds(30), "\(delay)")
        #expect(failover.currentIndex == 0)
        #expect(a.streamRequests.count == 1 && b.streamRequests.count == 1)
        await failover.shutdown()
        await a.shutdown()
        await b.shutdown()
    }

    @Test("one relay refuses 503 with Retry-After, the next one streams: no wait", arguments: Transport.allCases)
    func failoverDoesNotWaitWhenOneAnswers(_ transport: Transport) async throws {
        let a = try await FakeStreamAnswerRelay.start([.refuse(status: 503, retryAfter: "3600")])
        let b = try await FakeStreamAnswerRelay.start([.eventStream(eventID: "1603214613006763")])
        var configuration = Self.configuration(a)
        configuration.fallbackServerURLs = [b.serverURL]
        let failover = try FailoverTransport(configuration: configuration) { try transport.make($0) }
        let client = try Self.client(configuration, transport: failover)
        let states = client.states()
        let handled = HandledMessages()
        var seen: [PushClientState] = []
        try await PushClientNetworkTests.withRunningClient(client, handled: handled) {
            seen = try await states.until("connected") { if case .connected = $0 { true } else { false } }
            try await withTimeout(20, "the message handled") {
                while await handled.ids.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            }
        }
        #expect(!seen.contains { if case .reconnecting = $0 { true } else { false } }, "\(seen)")
        #expect(await handled.ids == ["1603214613006763"])
        #expect(failover.currentIndex == 1)
        await failover.shutdown()
        await a.shutdown()
        await b.shutdown()
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
