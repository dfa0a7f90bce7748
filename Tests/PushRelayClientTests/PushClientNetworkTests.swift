import PushRelayWire
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import PushRelayClient
@testable import PushRelayClientNIO

/// What the app's handler saw, in order.
actor HandledMessages {
    private(set) var ids: [String] = []
    private(set) var failures: [String] = []
    private var failOnce: Set<String> = []

    func failOnce(_ id: String) { failOnce.insert(id) }

    /// Records `message`; throws the first time for ids registered with ``failOnce(_:)``.
    func handle(_ message: PushMessage) throws {
        if failOnce.remove(message.id) != nil {
            failures.append(message.id)
            throw HandlerFailure()
        }
        ids.append(message.id)
    }

    struct HandlerFailure: Error {}
}

/// The client scenarios against a relay: the in-process ``FakeRelayServer`` here; the same functions can be
/// pointed at the real daemon through another ``RelayUnderTest``.
@Suite("PushClient over the network")
struct PushClientNetworkTests {
    static func configuration(for relay: some RelayUnderTest) -> PushClientConfiguration {
        var configuration = PushClientConfiguration(serverURL: relay.serverURL, registration: relay.registration)
        configuration.backoff = BackoffPolicy(base: .milliseconds(20), maximum: .milliseconds(100),
                                              stableAfter: .seconds(30))
        configuration.heartbeatTimeout = .seconds(20)
        return configuration
    }

    static func makeClient(_ configuration: PushClientConfiguration) throws -> PushClient {
        var logger = Logger(label: "test.client")
        logger.logLevel = .critical
        // The fake speaks HTTP/1.1 only: these tests are about the client's logic, on the fallback transport.
        return try PushClient(configuration: configuration, transport: HTTP1Transport(configuration: configuration),
                              logger: logger, makeRandomNumberGenerator: { SystemRandomNumberGenerator() })
    }

    /// Runs `client` while `body` runs, then stops it and waits for `run` to return.
    static func withRunningClient(
        isolation: isolated (any Actor)? = #isolation,
        _ client: PushClient,
        handled: HandledMessages = HandledMessages(),
        _ body: () async throws -> Void
    ) async throws {
        try await withRunningClient(client, onMessage: { try await handled.handle($0) }, body)
    }

    /// Runs `client` with the handler `onMessage` while `body` runs, then stops it and waits for `run` to return.
    static func withRunningClient(
        isolation: isolated (any Actor)? = #isolation,
        _ client: PushClient,
        onMessage: @escaping @Sendable (PushMessage) async throws -> Void,
        _ body: () async throws -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await client.run(onMessage: onMessage) }
            do {
                try await body()
            } catch {
                client.stop()
                group.cancelAll()
                throw error
            }
            client.stop()
            try await group.waitForAll()
        }
    }

    /// Runs `client` until it publishes its first ``PushClientState/reconnecting(attempt:after:)``, then stops it
    /// and waits for `run` to return: the attempt and the delay that state said. Nothing waits out the delay.
    static func firstReconnection(
        isolation: isolated (any Actor)? = #isolation, of client: PushClient
    ) async throws -> (attempt: Int, delay: Duration) {
        let states = client.states()
        var published: PushClientState?
        try await withRunningClient(client) {
            published = try await states.until("a reconnection") {
                if case .reconnecting = $0 { true } else { false }
            }.last
        }
        guard case .reconnecting(let attempt, let delay) = published else {
            throw TestTimeout(what: "a reconnection (got \(String(describing: published)))")
        }
        return (attempt, delay)
    }

    @Test("the scenario arrives: registered, received, the view model holds the five values, acknowledged")
    @MainActor
    func scenario() async throws {
        let relay = try await FakeRelayServer.start()
        let client = try Self.makeClient(Self.configuration(for: relay))
        let viewModel = SalesMessageViewModel(client: client)
        let delegate = RecordingDelegate()
        viewModel.delegate = delegate
        let states = client.states()
        let notifications = client.salesNotifications()

        try await Self.withRunningClient(client) {
            _ = try await states.until("connected") { if case .connected = $0 { true } else { false } }
            let id = try await relay.sendScenario(to: Scenario.token, orderID: 3)
            let received = try await notifications.first(1, "the scenario's notification")
            #expect(received == [ReceivedSalesNotification(messageID: id, notification: Scenario.notification)])
        }
        #expect(viewModel.messageId == Scenario.messageID)
        #expect(viewModel.infoReason == "Status de pedido")
        #expect(viewModel.orderID == 3)
        #expect(viewModel.newOrderStatus == "Novo pedido")
        #expect(viewModel.userEmail == "matilde@siecola.com.br")
        #expect(viewModel.screen?.text == Scenario.screen)
        #expect(client.credentials?.token == Scenario.token)
        #expect(Array(delegate.states.prefix(4)) == [
            .registering, .registered(token: Scenario.token), .connecting, .connected(token: Scenario.token),
        ])
        #expect(delegate.states.contains(.received(Scenario.notification, messageID: Scenario.messageID)))
        #expect(delegate.states.last == .idle)
        let recorded = relay.recorded
        #expect(recorded.acknowledged == [Scenario.messageID])
        #expect(recorded.registrations == [["project": "shop", "app": "br.com.siecola.shop", "platform": "linux"]])
        try await relay.shutdown()
    }

    @Test("the server drops the stream: the client reconnects with Last-Event-ID; each message reaches the app once")
    func reconnectExactlyOnce() async throws {
        let relay = try await FakeRelayServer.start(redeliverEverything: true)
        let client = try Self.makeClient(Self.configuration(for: relay))
        let handled = HandledMessages()
        let notifications = client.salesNotifications()
        let states = client.states()
        var ids: [String] = []
        try await Self.withRunningClient(client, handled: handled) {
            _ = try await states.until("connected") { if case .connected = $0 { true } else { false } }
            ids.append(try await relay.sendScenario(to: Scenario.token, orderID: 1))
            ids.append(try await relay.sendScenario(to: Scenario.token, orderID: 2))
            _ = try await notifications.first(2, "the first two messages")
            try await relay.interruptStreams()
            ids.append(try await relay.sendScenario(to: Scenario.token, orderID: 3))  // Sent while disconnected.
            let third = try await notifications.first(1, "the message sent meanwhile")
            #expect(third.map(\.notification.orderID) == [3])
            _ = try await states.until("reconnected") { if case .connected = $0 { true } else { false } }
        }
        // The fake sent 1 and 2 again on the second stream; the app saw each message once.
        #expect(await handled.ids == ids)
        let recorded = relay.recorded
        #expect(recorded.lastEventIDs.count >= 2)
        #expect(recorded.lastEventIDs.first == .some(nil))
        #expect(recorded.lastEventIDs.dropFirst().first == .some(ids[1]))
        #expect(Set(recorded.acknowledged) == Set(ids))
        try await relay.shutdown()
    }

    @Test("a handler that throws: no acknowledgement, the message is delivered again on the next stream")
    @MainActor
    func handlerThrows() async throws {
        let relay = try await FakeRelayServer.start()
        let client = try Self.makeClient(Self.configuration(for: relay))
        let viewModel = SalesMessageViewModel(client: client)
        let handled = HandledMessages()
        let notifications = client.salesNotifications()
        let states = client.states()
        try await Self.withRunningClient(client, handled: handled) {
            _ = try await states.until("connected") { if case .connected = $0 { true } else { false } }
            let first = String(1_603_214_613_006_763)
            await handled.failOnce(first)
            #expect(try await relay.sendScenario(to: Scenario.token, orderID: 1) == first)
            let second = try await relay.sendScenario(to: Scenario.token, orderID: 2)
            #expect(try await notifications.first(1, "the second message").map(\.messageID) == [second])
            try await relay.interruptStreams()
            #expect(try await notifications.first(1, "the first message again").map(\.messageID) == [first])
        }
        #expect(await handled.failures == ["1603214613006763"])
        #expect(await handled.ids == ["1603214613006764", "1603214613006763"])
        let recorded = relay.recorded
        // The failed message held the resume id back: Last-Event-ID must not acknowledge it.
        #expect(recorded.lastEventIDs.prefix(2) == [nil, nil])
        #expect(recorded.acknowledged == ["1603214613006764", "1603214613006763"])
        #expect(viewModel.orderID == 1)
        try await relay.shutdown()
    }

    /// `stop()` while the handler runs waits for it; a handler that then throws must not leave `run` reading a
    /// stream on which nothing more comes (the end-to-end `handlerThrows` hung this way when the test's `stop()` met
    /// the handler's failure). Here the handler itself stops the client, then throws: deterministic.
    @Test("stop() during a handler that throws: run returns, and the message stays unacknowledged")
    func stopDuringFailingHandler() async throws {
        let relay = try await FakeRelayServer.start()
        let client = try Self.makeClient(Self.configuration(for: relay))
        let states = client.states()
        let failed = NIOLockedValueBox<[String]>([])
        let run = Task {
            try await client.run { message in
                client.stop()
                failed.withLockedValue { $0.append(message.id) }
                throw HandledMessages.HandlerFailure()
            }
        }
        _ = try await states.until("connected") { if case .connected = $0 { true } else { false } }
        let id = try await relay.sendScenario(to: Scenario.token, orderID: 1)
        // No heartbeat and no further message: only the stop can end the run.
        let returned = try? await withTimeout(20, "run() to return after stop()") {
            try await run.value
            return true
        }
        run.cancel()
        #expect(returned == true)
        #expect(failed.withLockedValue { $0 } == [id])
        #expect(relay.recorded.acknowledged.isEmpty)
        try await relay.shutdown()
    }

    /// Deterministic since the heartbeat timer starts at the response head (``IdleReadTimeoutHandler``): a slow
    /// connect or head on a loaded machine no longer counts as silence, so `connected` always precedes the
    /// reconnection, and the fake sends nothing after the head, so the timeout always fires.
    @Test("a silent stream is declared dead after the heartbeat timeout and replaced")
    func heartbeatTimeout() async throws {
        let relay = try await FakeRelayServer.start()
        var configuration = Self.configuration(for: relay)
        configuration.heartbeatTimeout = .milliseconds(300)
        let client = try Self.makeClient(configuration)
        let states = client.states()
        try await Self.withRunningClient(client) {
            let seen = try await states.until("a reconnection") {
                if case .reconnecting = $0 { true } else { false }
            }
            #expect(seen.contains { if case .connected = $0 { true } else { false } })
            _ = try await states.until("connected again") { if case .connected = $0 { true } else { false } }
        }
        #expect(relay.recorded.lastEventIDs.count >= 2)
        try await relay.shutdown()
    }

    @Test("a relay without HTTP/2 (the HTTP/1.1 fake): the default transport falls back to HTTP/1.1 for good")
    func fallbackToHTTP1() async throws {
        let relay = try await FakeRelayServer.start()
        var configuration = Self.configuration(for: relay)
        configuration.connectTimeout = .seconds(1)  // How long a new h2c connection has to answer.
        let client = try PushClient(configuration: configuration, transport: HTTP2Transport(configuration: configuration))
        let transport = try #require(client.transport as? HTTP2Transport)
        #expect(await transport.negotiatedProtocol == nil)
        try await client.register()
        #expect(await transport.negotiatedProtocol == "http/1.1")
        // One h2c attempt (two when the first one's connect already failed on a loaded machine); none after it.
        let opened = await transport.connectionsOpened
        #expect((1...2).contains(opened))
        try await client.register()
        #expect(await transport.connectionsOpened == opened)
        #expect(relay.recorded.registrations.count == 2)
        try await relay.shutdown()
    }

    @Test("a refused secret stops the client with failed(message:) and an unauthorized error")
    func refusedSecret() async throws {
        let relay = try await FakeRelayServer.start()
        let configuration = PushClientConfiguration(
            serverURL: relay.serverURL, credentials: PushCredentials(token: nil, secret: "wrong"))
        let client = try Self.makeClient(configuration)
        await #expect {
            try await client.run()
        } throws: { error in
            (error as? PushClientError)?.code == .unauthorized
        }
        guard case .failed(let message) = client.state else {
            Issue.record("expected failed, got \(client.state)")
            return
        }
        #expect(message.contains("401"))
        try await relay.shutdown()
    }

    @Test("spent attempts end run() with gaveUp (the last failure is in the message) and failed(message:)")
    func gaveUp() async throws {
        // A relay that is gone (its port refuses connections): every attempt fails with connectionClosed.
        let relay = try await FakeRelayServer.start()
        let serverURL = relay.serverURL
        try await relay.shutdown()
        var configuration = PushClientConfiguration(
            serverURL: serverURL, credentials: PushCredentials(token: nil, secret: "s"))
        configuration.backoff = BackoffPolicy(base: .milliseconds(1), maximum: .milliseconds(2), maximumAttempts: 2)
        let client = try Self.makeClient(configuration)
        await #expect {
            try await client.run()
        } throws: { error in
            guard let error = error as? PushClientError else { return false }
            return error.code == .gaveUp && error.description.contains("2 attempts")
        }
        guard case .failed(let message) = client.state else {
            Issue.record("expected failed, got \(client.state)")
            return
        }
        #expect(message.contains("gave up after 2 attempts"))
    }

    @Test("a wrong client key is refused at registration")
    func refusedClientKey() async throws {
        let relay = try await FakeRelayServer.start()
        var registration = relay.registration
        registration.clientKey = "wrong"
        let client = try Self.makeClient(PushClientConfiguration(serverURL: relay.serverURL,
                                                                 registration: registration))
        await #expect {
            try await client.register()
        } throws: { error in
            (error as? PushClientError)?.code == .unauthorized
        }
        try await relay.shutdown()
    }

    @Test("credentials and the dedup window persist across clients; unregister forgets them")
    func persistence() async throws {
        let relay = try await FakeRelayServer.start(redeliverEverything: true)
        let directory = try TemporaryDirectory()
        var configuration = Self.configuration(for: relay)
        configuration.credentialsFile = directory.url.appendingPathComponent("device.json")
        configuration.deduplicationFile = directory.url.appendingPathComponent("seen.json")

        let first = try Self.makeClient(configuration)
        let handledFirst = HandledMessages()
        let notifications = first.salesNotifications()
        let id = try await relay.sendScenario(to: Scenario.token, orderID: 3)
        try await Self.withRunningClient(first, handled: handledFirst) {
            _ = try await notifications.first(1)
        }
        #expect(await handledFirst.ids == [id])

        // A new client (a restart): loads the token and secret, and recognises the redelivered message.
        let second = try Self.makeClient(configuration)
        #expect(second.credentials?.token == Scenario.token)
        let handledSecond = HandledMessages()
        let states = second.states()
        let later = try await relay.sendScenario(to: Scenario.token, orderID: 4)
        let notificationsSecond = second.salesNotifications()
        try await Self.withRunningClient(second, handled: handledSecond) {
            _ = try await states.until("connected") { if case .connected = $0 { true } else { false } }
            _ = try await notificationsSecond.first(1)
        }
        #expect(await handledSecond.ids == [later])
        #expect(relay.recorded.registrations.count == 1)

        try await second.unregister()
        #expect(relay.recorded.unregistered)
        #expect(second.credentials == nil)
        #expect(!FileManager.default.fileExists(atPath: configuration.credentialsFile!.path))
        try await relay.shutdown()
    }
}
