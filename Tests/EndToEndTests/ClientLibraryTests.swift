import Foundation
import Logging
import Testing

@testable import PushRelayClient
import PushRelayClientNIO
import TestSupport

/// The transports the client library's tests run over.
enum ClientTransport: String, CaseIterable, CustomTestStringConvertible {
    /// `HTTP2Transport` (PushRelayClientNIO: SwiftNIO and libnghttp2).
    case nio
    /// `URLSessionTransport` (FoundationNetworking on Linux).
    case urlSession

    var testDescription: String { rawValue }

    func make(_ configuration: PushClientConfiguration) throws -> any PushTransport {
        switch self {
        case .nio: try HTTP2Transport(configuration: configuration)
        case .urlSession: try URLSessionTransport(configuration: configuration)
        }
    }
}

/// The client library (``PushClient``, over each transport) against the real daemon, with curl as the back end.
@Suite("Client library against the real daemon", .serialized, .tags(.endToEnd), .hangGuard)
struct ClientLibraryTests {
    static func client(
        _ daemon: Daemon, _ keys: ProjectKeys, transport: ClientTransport = .nio, backoff: BackoffPolicy? = nil,
        heartbeatTimeout: Duration? = nil
    ) throws -> PushClient {
        var configuration = PushClientConfiguration(
            serverURL: URL(string: daemon.baseURL)!,
            registration: .init(project: keys.project, app: "br.com.siecola.shop", clientKey: keys.clientKey))
        configuration.backoff = backoff ?? BackoffPolicy(base: .milliseconds(50), maximum: .milliseconds(500),
                                                         stableAfter: .seconds(30))
        if let heartbeatTimeout { configuration.heartbeatTimeout = heartbeatTimeout }
        var logger = Logger(label: "e2e.client")
        logger.logLevel = .critical
        return try PushClient(configuration: configuration, transport: transport.make(configuration), logger: logger)
    }

    static func sendScenario(_ daemon: Daemon, _ keys: ProjectKeys, to token: String, orderID: Int = 3) async throws
        -> String
    {
        let body = scenarioBody.replacingOccurrences(of: "TOKEN", with: token)
            .replacingOccurrences(of: "\"orderID\": 3", with: "\"orderID\": \(orderID)")
        let answer = try await daemon.send(body, serverKey: keys.serverKey)
        guard answer.status == 200 else { throw DaemonError(message: "send: \(answer.status) \(answer.body)") }
        return try messageID(ofSendResponse: answer.body)
    }

    @Test("the scenario sent with curl arrives; the view model holds the five values", arguments: ClientTransport.allCases)
    @MainActor
    func scenario(transport: ClientTransport) async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let client = try Self.client(daemon, keys, transport: transport)
        let viewModel = SalesMessageViewModel(client: client)
        let credentials = try await client.register()
        let token = try #require(credentials.token)
        #expect(token.contains(":APA91b"))
        let handled = Handled()
        var id = ""
        try await withRunningClient(client, handled: handled) {
            try await waitUntil("connected") { client.state.isConnected }
            id = try await Self.sendScenario(daemon, keys, to: token)
            try await waitUntil("the view model shows the message") { viewModel.messageId == id }
            try await waitUntil("acknowledged") { await handled.ids == [id] }
            if let transport = client.transport as? HTTP2Transport {
                #expect(await transport.negotiatedProtocol == "h2")
                // Registration, stream and acknowledgement on one connection.
                #expect(await transport.connectionsOpened == 1)
            }
        }
        // Acknowledged means gone from the queue: a later message is the first thing a new stream of the device gets
        // (the queue is in order, so an unacknowledged one would come before it).
        let later = try await Self.sendScenario(daemon, keys, to: token, orderID: 4)
        let ids = try await Self.idsOnNewStream(daemon, secret: try #require(client.credentials?.secret), until: later)
        #expect(ids == [later])
        #expect(viewModel.messageId == id)
        #expect(viewModel.infoReason == "Status de pedido")
        #expect(viewModel.orderID == 3)
        #expect(viewModel.newOrderStatus == "Novo pedido")
        #expect(viewModel.userEmail == "matilde@siecola.com.br")
        #expect(viewModel.screen?.lines == [
            "Message Id: \(id)", "Reason: Status de pedido", "Order Id: 3", "Status: Novo pedido",
            "Email: matilde@siecola.com.br",
        ])
        try await daemon.terminate()
    }

    /// Opens a new stream of the device with curl and returns the ids of its events, up to and including `id`.
    nonisolated static func idsOnNewStream(_ daemon: Daemon, secret: String, until id: String) async throws
        -> [String?]
    {
        let stream = try daemon.openStream(secret: secret)
        defer { stream.stop() }
        let text = try await stream.waitFor("message \(id)") { parseEvents($0).contains { $0.id == id } }
        return parseEvents(text).map(\.id)
    }

    @Test(
        "the daemon is killed (-9) and restarted mid-stream: the client reconnects, each message reaches the app once",
        arguments: ClientTransport.allCases)
    func daemonRestart(transport: ClientTransport) async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        // A slow first retry, so that messages are sent while the client is still away.
        let client = try Self.client(daemon, keys, transport: transport, backoff: BackoffPolicy(base: .milliseconds(800),
                                                                          maximum: .seconds(2),
                                                                          stableAfter: .seconds(30)))
        let token = try #require(try await client.register().token)
        let handled = Handled()
        var ids: [String] = []
        try await withRunningClient(client, handled: handled) {
            try await waitUntil("connected") { client.state.isConnected }
            ids.append(try await Self.sendScenario(daemon, keys, to: token, orderID: 1))
            try await waitUntil("the first message") { await handled.ids.count == 1 }
            ids.append(try await Self.sendScenario(daemon, keys, to: token, orderID: 2))
            try await daemon.kill9()
            try await daemon.start()
            ids.append(try await Self.sendScenario(daemon, keys, to: token, orderID: 3))
            ids.append(try await Self.sendScenario(daemon, keys, to: token, orderID: 4))
            try await waitUntil("every message", timeout: .seconds(60)) { await handled.ids.count >= 4 }
            // A last message as a barrier: the stream delivers in id order, so a duplicate of an earlier message
            // would reach the app before it (no fixed wait).
            ids.append(try await Self.sendScenario(daemon, keys, to: token, orderID: 5))
            try await waitUntil("the barrier message", timeout: .seconds(60)) { await handled.ids.count >= 5 }
        }
        #expect(await handled.ids == ids)
        try await daemon.terminate()
    }

    @Test("a handler that throws: the message is not acknowledged and arrives again on the next stream",
          arguments: ClientTransport.allCases)
    func handlerThrows(transport: ClientTransport) async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let client = try Self.client(daemon, keys, transport: transport)
        let token = try #require(try await client.register().token)
        let handled = Handled(failFirst: true)
        var id = ""
        try await withRunningClient(client, handled: handled) {
            try await waitUntil("connected") { client.state.isConnected }
            id = try await Self.sendScenario(daemon, keys, to: token)
            try await waitUntil("the failure") { await handled.failures == [id] }
        }
        #expect(await handled.ids.isEmpty)
        // A new stream (same client, same dedup window): the relay delivers the message again.
        try await withRunningClient(client, handled: handled) {
            try await waitUntil("the redelivery") { await handled.ids == [id] }
        }
        #expect(await handled.failures == [id])
        try await daemon.terminate()
    }

    /// A relay heard over HTTP/2 that stalls (here SIGSTOP while the client opens a new connection) is still an
    /// HTTP/2 relay: the transport fails that request and goes on with HTTP/2, not HTTP/1.1 for the rest of its life.
    @Test("a relay that spoke HTTP/2 and then stalled is not taken for an HTTP/1.1 server")
    func stallDoesNotDowngrade() async throws {
        let daemon = try Daemon(arguments: ["--idle-timeout", "1s"])
        try await daemon.start()
        let keys = try await daemon.createProject()
        var configuration = PushClientConfiguration(
            serverURL: URL(string: daemon.baseURL)!,
            registration: .init(project: keys.project, app: "br.com.siecola.shop", clientKey: keys.clientKey))
        configuration.connectTimeout = .seconds(1)  // how long a new connection has to answer
        let transport = try HTTP2Transport(configuration: configuration)
        let client = try PushClient(configuration: configuration, transport: transport)
        _ = try await client.register()
        #expect(await transport.negotiatedProtocol == "h2")
        try await Task.sleep(for: .milliseconds(1500))  // the daemon closes the idle connection
        let pid = try #require(daemon.process?.processIdentifier)
        kill(pid, SIGSTOP)
        let stalled = Task { try await client.register() }
        try await Task.sleep(for: .seconds(2))  // past the new connection's second to answer
        kill(pid, SIGCONT)
        _ = try? await stalled.value
        _ = try await client.register()
        #expect(await transport.negotiatedProtocol == "h2")
        try await daemon.terminate()
    }

    @Test("a stream silent for the heartbeat timeout is replaced; messages still arrive once",
          arguments: ClientTransport.allCases)
    func heartbeatTimeout(transport: ClientTransport) async throws {
        let daemon = try Daemon()  // Heartbeats every 25 s: far beyond the client's 400 ms.
        try await daemon.start()
        let keys = try await daemon.createProject()
        let client = try Self.client(
            daemon, keys, transport: transport,
            backoff: BackoffPolicy(base: .milliseconds(50), maximum: .milliseconds(200), stableAfter: .seconds(30)),
            heartbeatTimeout: .milliseconds(400))
        let token = try #require(try await client.register().token)
        let states = client.states()
        let connections = ConnectionCounter()
        let counting = Task { [connections] in
            for await state in client.states() where state.isConnected { await connections.count() }
        }
        defer { counting.cancel() }
        let handled = Handled()
        var id = ""
        try await withRunningClient(client, handled: handled) {
            try await waitUntil("a second stream, connected") {
                await connections.connected >= 2 && client.state.isConnected
            }
            id = try await Self.sendScenario(daemon, keys, to: token)
            try await waitUntil("the message after the reconnection") { await handled.ids == [id] }
        }
        #expect(await handled.ids == [id])
        var sawReconnect = false
        for await state in states {  // Buffered; run() ended with .idle.
            if case .reconnecting = state { sawReconnect = true }
            if state == .idle && sawReconnect { break }
        }
        #expect(sawReconnect)
        try await daemon.terminate()
    }

    @Test("many listeners in one process (PUSHRELAY_E2E_LISTENERS, default 1000) each receive their own message only")
    func manyListeners() async throws {
        let count = ProcessInfo.processInfo.environment["PUSHRELAY_E2E_LISTENERS"].flatMap { Int($0) } ?? 1000
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let started = ContinuousClock.now
        var clients: [PushClient] = []
        for _ in 0..<count { clients.append(try Self.client(daemon, keys)) }
        // Register in batches of 50.
        var tokens: [String] = Array(repeating: "", count: count)
        for batch in stride(from: 0, to: count, by: 50) {
            try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for index in batch..<min(batch + 50, count) {
                    let client = clients[index]
                    group.addTask { (index, try await client.register().token ?? "") }
                }
                for try await (index, token) in group { tokens[index] = token }
            }
        }
        #expect(Set(tokens).count == count)
        let registered = ContinuousClock.now
        let received = (0..<count).map { _ in Handled() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                let client = clients[index]
                let handled = received[index]
                group.addTask { try await client.run { try await handled.handle($0) } }
            }
            defer {
                for client in clients { client.stop() }
            }
            try await waitUntil("every listener connected", timeout: .seconds(300)) {
                clients.allSatisfy { $0.state.isConnected }
            }
            let connected = ContinuousClock.now
            try await daemon.sendMany(keys, orders: tokens.enumerated().map { (token: $0.element, orderID: $0.offset) })
            try await waitUntil("every message", timeout: .seconds(300)) {
                var total = 0
                for handled in received { total += await handled.orderIDs.count }
                return total >= count
            }
            let delivered = ContinuousClock.now
            // A second message to each listener as a barrier: each stream delivers in id order, so a stray extra
            // message would reach its listener before the barrier (no fixed wait).
            try await daemon.sendMany(keys, orders: tokens.enumerated().map { (token: $0.element, orderID: count + $0.offset) })
            try await waitUntil("every barrier message", timeout: .seconds(300)) {
                var total = 0
                for handled in received { total += await handled.orderIDs.count }
                return total >= 2 * count
            }
            for (index, handled) in received.enumerated() {
                let orders = await handled.orderIDs
                #expect(orders == [index, count + index], "listener \(index) got \(orders)")
            }
            print("""
                manyListeners: \(count) listeners; registration \(registered - started), \
                connect \(connected - registered), delivery \(delivered - connected)
                """)
            for client in clients { client.stop() }
            try await group.waitForAll()
        }
        try await daemon.terminate()
    }
}

/// How many times a client reported `.connected`.
actor ConnectionCounter {
    private(set) var connected = 0

    func count() { connected += 1 }
}

/// What one app's handler saw.
actor Handled {
    private(set) var ids: [String] = []
    private(set) var orderIDs: [Int] = []
    private(set) var failures: [String] = []
    private var failFirst: Bool

    init(failFirst: Bool = false) {
        self.failFirst = failFirst
    }

    func handle(_ message: PushMessage) throws {
        if failFirst {
            failFirst = false
            failures.append(message.id)
            throw HandlerFailure()
        }
        ids.append(message.id)
        if let order = try? message.salesNotification() { orderIDs.append(order.orderID) }
    }

    struct HandlerFailure: Error {}
}

extension PushClientState {
    var isConnected: Bool {
        if case .connected = self { true } else { false }
    }
}

/// Runs `client` while `body` runs, then stops it and waits for `run` to return.
func withRunningClient(
    isolation: isolated (any Actor)? = #isolation,
    _ client: PushClient,
    handled: Handled,
    _ body: () async throws -> Void
) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await client.run { try await handled.handle($0) } }
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

/// Polls `condition` every 20 ms; throws after `timeout`.
func waitUntil(
    isolation: isolated (any Actor)? = #isolation,
    _ what: String,
    timeout: Duration = .seconds(20),
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw DaemonError(message: "timed out waiting for \(what)")
}

extension Daemon {
    /// Sends one scenario message per (token, order id), over one keep-alive HTTP/1.1 connection (python3).
    func sendMany(_ keys: ProjectKeys, orders: [(token: String, orderID: Int)]) async throws {
        let script = """
            import http.client, json, sys
            port, key = int(sys.argv[1]), sys.argv[2]
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            for line in sys.stdin:
                conn.request("POST", "/fcm/send", body=line.strip().encode(),
                             headers={"Authorization": "key=" + key, "Content-Type": "application/json"})
                response = conn.getresponse()
                response.read()
                print(response.status)
            """
        let bodies = orders.map { order in
            scenarioBody.replacingOccurrences(of: "TOKEN", with: order.token)
                .replacingOccurrences(of: "\"orderID\": 3", with: "\"orderID\": \(order.orderID)")
                .replacingOccurrences(of: "\n", with: " ")
        }
        let result = try await run("/usr/bin/python3", ["-c", script, String(port), keys.serverKey],
                             stdin: bodies.joined(separator: "\n") + "\n")
        let codes = result.stdout.split(separator: "\n")
        guard result.status == 0, codes.count == orders.count, codes.allSatisfy({ $0 == "200" }) else {
            throw DaemonError(message: "sendMany: \(result.status) \(codes.filter { $0 != "200" }.prefix(5)) "
                + result.stderr)
        }
    }
}
