import Foundation
import Testing

@testable import PushRelayClient
@testable import PushRelayClientNIO

/// Errors no retry cures, met by the stream (the client has credentials, so ``PushClient/run(onMessage:)`` does not
/// register): each transport's own way of never making the request ends the run at once, as the same error ends
/// the registration, and ``FailoverTransport`` passes such a relay over for the next. The contrast: a relay that
/// does not listen is a failure that may pass, on every transport (retried; failed over). Against
/// ``FakeStreamAnswerRelay``, over each transport.
@Suite("Configuration errors on the stream, over each transport")
struct StreamConfigurationErrorTests {
    typealias Transport = StreamAnswerTests.Transport

    /// The backoff of ``StreamAnswerTests`` with two attempts: a client that took the error for one that may pass
    /// ends in `gaveUp` after two short waits instead of retrying for ever, so that the tests fail fast without the
    /// rule.
    static func configuration(_ relay: FakeStreamAnswerRelay) -> PushClientConfiguration {
        var configuration = StreamAnswerTests.configuration(relay)
        configuration.backoff.maximumAttempts = 2
        return configuration
    }

    @Test("a stream the transport can never open: run() ends at once with its error, failed, lastError says why",
          arguments: Transport.allCases)
    func unusableTransportEndsRun(_ transport: Transport) async throws {
        let relay = try await FakeStreamAnswerRelay.start([.eventStream(eventID: "1603214613006763")])
        let configuration = Self.configuration(relay)
        let client = try StreamAnswerTests.client(
            configuration, transport: transport.makeUnusable(configuration, relay: relay))
        let states = client.states()
        let error = try await failure(ofRunning: client)
        #expect(error.code == transport.unusableCode, "\(error)")
        #expect(client.lastError?.code == transport.unusableCode, "\(String(describing: client.lastError))")
        let seen = try await states.until("failed") { if case .failed = $0 { true } else { false } }
        #expect(seen == [.idle, .connecting, .failed(message: error.message)], "\(seen)")
        #expect(client.state == .failed(message: error.message))
        #expect(relay.streamRequests.isEmpty)
        await client.transport.shutdown()
        await relay.shutdown()
    }

    @Test("failover: the first relay cannot be used, the next one streams: the client connects there, no wait",
          arguments: Transport.allCases)
    func failoverPassesOverAnUnusableRelay(_ transport: Transport) async throws {
        let a = try await FakeStreamAnswerRelay.start([.eventStream(eventID: "1")])
        let b = try await FakeStreamAnswerRelay.start([.eventStream(eventID: "1603214613006763")])
        let configuration = Self.configuration(a)
        let failover = FailoverTransport(transports: [
            try transport.makeUnusable(configuration, relay: a), try transport.make(StreamAnswerTests.configuration(b)),
        ])
        let client = try StreamAnswerTests.client(configuration, transport: failover)
        let states = client.states()
        let handled = HandledMessages()
        var seen: [PushClientState] = []
        try await PushClientNetworkTests.withRunningClient(client, handled: handled) {
            seen = try await states.until("connected") { if case .connected = $0 { true } else { false } }
            try await withTimeout(20, "the message handled") {
                while await handled.ids.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            }
        }
        #expect(seen == [.idle, .connecting, .connected(token: "token")], "\(seen)")
        #expect(await handled.ids == ["1603214613006763"])
        #expect(failover.currentIndex == 1)
        #expect(a.streamRequests.isEmpty && b.streamRequests.count == 1)
        await failover.shutdown()
        await a.shutdown()
        await b.shutdown()
    }

    @Test("failover: no relay can be used: run() ends with the first one's code, both named, failed published",
          arguments: Transport.allCases)
    func failoverEndsWhenNoRelayCanBeUsed(_ transport: Transport) async throws {
        let a = try await FakeStreamAnswerRelay.start([.eventStream(eventID: "1")])
        let b = try await FakeStreamAnswerRelay.start([.eventStream(eventID: "1")])
        let configuration = Self.configuration(a)
        let failover = FailoverTransport(transports: [
            try transport.makeUnusable(configuration, relay: a),
            try transport.makeUnusable(StreamAnswerTests.configuration(b), relay: b),
        ])
        let client = try StreamAnswerTests.client(configuration, transport: failover)
        let states = client.states()
        let error = try await failure(ofRunning: client)
        #expect(error.code == transport.unusableCode, "\(error)")
        #expect(error.message.contains("relay 0: ") && error.message.contains("relay 1: "), "\(error.message)")
        let seen = try await states.until("failed") { if case .failed = $0 { true } else { false } }
        #expect(!seen.contains { if case .reconnecting = $0 { true } else { false } }, "\(seen)")
        #expect(client.lastError?.code == transport.unusableCode)
        #expect(a.streamRequests.isEmpty && b.streamRequests.isEmpty)
        await failover.shutdown()
        await a.shutdown()
        await b.shutdown()
    }

    @Test("failover: the first relay cannot be used, the last refuses 503 with Retry-After: 2: the client waits it",
          arguments: Transport.allCases)
    func failoverWaitsTheOtherRelaysRefusal(_ transport: Transport) async throws {
        let a = try await FakeStreamAnswerRelay.start([.eventStream(eventID: "1")])
        let b = try await FakeStreamAnswerRelay.start([.refuse(status: 503, retryAfter: "2")])
        let configuration = Self.configuration(a)
        let failover = FailoverTransport(transports: [
            try transport.makeUnusable(configuration, relay: a), try transport.make(StreamAnswerTests.configuration(b)),
        ])
        let client = try StreamAnswerTests.client(configuration, transport: failover)
        // Stopped as soon as the client says how long it waits: nothing here waits the 2 s.
        let (attempt, delay) = try await PushClientNetworkTests.firstReconnection(of: client)
        #expect(attempt == 1)
        // b's own answer, handed on as it came: its 2 s, more than the backoff (at most 100 ms).
        #expect(delay >= .seconds(2) && delay <= BackoffPolicy().maximumRetryAfter, "\(delay)")
        #expect(client.lastError?.code == .httpStatus && client.lastError?.status == 503)
        #expect(failover.currentIndex == 1)
        #expect(a.streamRequests.isEmpty && b.streamRequests.count == 1)
        await failover.shutdown()
        await a.shutdown()
        await b.shutdown()
    }

    @Test("failover: the first relay refuses 503 with Retry-After: 30, the last cannot be used: the client waits it",
          arguments: Transport.allCases)
    func failoverWaitsARefusalBeforeAnUnusableRelay(_ transport: Transport) async throws {
        let a = try await FakeStreamAnswerRelay.start([.refuse(status: 503, retryAfter: "30")])
        let b = try await FakeStreamAnswerRelay.start([.eventStream(eventID: "1")])
        let configuration = Self.configuration(a)
        let failover = FailoverTransport(transports: [
            try transport.make(configuration), try transport.makeUnusable(StreamAnswerTests.configuration(b), relay: b),
        ])
        let client = try StreamAnswerTests.client(configuration, transport: failover)
        let (attempt, delay) = try await PushClientNetworkTests.firstReconnection(of: client)
        #expect(attempt == 1)
        // a's 30 s, counted from its answer and rounded up to whole seconds: more than the backoff (at most 100 ms)
        // however long this machine stalls between a's answer and b's (30 s, not 2, for that reason).
        #expect(delay > .milliseconds(100) && delay <= .seconds(30), "\(delay)")
        let last = try #require(client.lastError)
        #expect(last.code == .httpStatus && last.status == 503, "\(last)")
        #expect(last.message.contains("relay 1: "), "\(last.message)")
        #expect(failover.currentIndex == 0)
        #expect(a.streamRequests.count == 1 && b.streamRequests.isEmpty)
        await failover.shutdown()
        await a.shutdown()
        await b.shutdown()
    }

    @Test("the contrast: run()'s registration to a relay that does not listen is retried with the backoff",
          arguments: Transport.allCases)
    func unreachableRegistrationIsRetried(_ transport: Transport) async throws {
        let refusing = try RefusingPort()
        defer { refusing.release() }
        var configuration = PushClientConfiguration(
            serverURL: refusing.url,
            registration: .init(project: "shop", app: "br.com.siecola.shop", platform: "linux", clientKey: "k"))
        // StreamAnswerTests' backoff: 20 ms doubling to 100 ms, no jitter.
        configuration.backoff = BackoffPolicy(base: .milliseconds(20), maximum: .milliseconds(100), jitter: .none)
        configuration.connectTimeout = .seconds(5)
        let client = try StreamAnswerTests.client(configuration, over: transport)
        let (attempt, delay) = try await PushClientNetworkTests.firstReconnection(of: client)
        #expect(attempt == 1 && delay == .milliseconds(20))
        #expect(client.lastError?.code == .connectionClosed, "\(String(describing: client.lastError))")
        await client.transport.shutdown()
    }

    @Test("the contrast: failover from a relay that does not listen to the next one, which streams",
          arguments: Transport.allCases)
    func failoverPassesOverAnUnreachableRelay(_ transport: Transport) async throws {
        let b = try await FakeStreamAnswerRelay.start([.eventStream(eventID: "1603214613006763")])
        let refusing = try RefusingPort()
        defer { refusing.release() }
        var configuration = StreamAnswerTests.configuration(b)
        configuration.serverURL = refusing.url
        configuration.fallbackServerURLs = [b.serverURL]
        let failover = try FailoverTransport(configuration: configuration) { try transport.make($0) }
        let client = try StreamAnswerTests.client(configuration, transport: failover)
        let states = client.states()
        var seen: [PushClientState] = []
        try await PushClientNetworkTests.withRunningClient(client) {
            seen = try await states.until("connected") { if case .connected = $0 { true } else { false } }
        }
        #expect(seen == [.idle, .connecting, .connected(token: "token")], "\(seen)")
        #expect(failover.currentIndex == 1)
        await failover.shutdown()
        await b.shutdown()
    }

    @Test("URLSession's refusal of the request's own URL is a configuration error; of a redirect's, it may pass")
    func urlSessionRefusedURL() throws {
        let url = try #require(URL(string: "http://127.0.0.1:70000/v1/stream"))
        let portal = try #require(URL(string: "http://portal.example/sign-in"))
        for code in URLSessionTransport.refusedURLCodes {
            let own = URLSessionTransport.clientError(
                URLError(code, userInfo: [NSURLErrorFailingURLErrorKey: url]), timedOut: false, url: url)
            #expect((own as? PushClientError)?.code == .invalidConfiguration, "\(own)")
            let unnamed = URLSessionTransport.clientError(URLError(code), timedOut: false, url: url)
            #expect((unnamed as? PushClientError)?.code == .invalidConfiguration, "\(unnamed)")
            let redirect = URLSessionTransport.clientError(
                URLError(code, userInfo: [NSURLErrorFailingURLErrorKey: portal]), timedOut: false, url: url)
            #expect((redirect as? PushClientError)?.code == .connectionClosed, "\(redirect)")
        }
        let refused = URLSessionTransport.clientError(URLError(.cannotConnectToHost), timedOut: false, url: url)
        #expect((refused as? PushClientError)?.code == .connectionClosed, "\(refused)")
    }
}

/// What a TLS handler factory throws when it cannot make a handler (say its certificate file is unreadable).
struct FakeTLSSetupError: Error, CustomStringConvertible {
    var description: String { "cannot load the trusted certificates" }
}

extension StreamAnswerTests.Transport {
    /// A transport of this kind that can never make a request to `relay`: the NIO transports on an `https` URL of
    /// the relay's port with a TLS handler factory that throws (HTTP/2 connects first, so the relay must listen);
    /// URLSession on a URL it refuses to request (a port out of range, which only the request finds).
    func makeUnusable(_ configuration: PushClientConfiguration, relay: FakeStreamAnswerRelay) throws
        -> any PushTransport
    {
        var configuration = configuration
        let factory: HTTP2Transport.TLSHandlerFactory = { _ in throw FakeTLSSetupError() }
        switch self {
        case .http2, .http1:
            var components = try #require(URLComponents(url: relay.serverURL, resolvingAgainstBaseURL: false))
            components.scheme = "https"
            configuration.serverURL = try #require(components.url)
            return self == .http2
                ? try HTTP2Transport(configuration: configuration, tlsHandlerFactory: factory)
                : try HTTP1Transport(configuration: configuration, tlsHandlerFactory: factory)
        case .urlSession:
            configuration.serverURL = try #require(URL(string: "http://127.0.0.1:70000"))
            return try URLSessionTransport(configuration: configuration)
        }
    }

    /// The error ``makeUnusable(_:relay:)``'s transport fails with.
    var unusableCode: PushClientError.Code {
        switch self {
        case .http2, .http1: .tlsNotConfigured
        case .urlSession: .invalidConfiguration
        }
    }
}
