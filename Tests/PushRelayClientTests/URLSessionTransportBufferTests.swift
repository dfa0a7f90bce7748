#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import HTTPTypes
import Logging
import Testing

@testable import PushRelayClient

/// ``URLSessionTransport`` on FoundationNetworking reads the stream through a data delegate, which cannot slow the
/// server down: what arrives unread is bounded by a byte budget, and a stream past it ends with `bufferLimitExceeded`
/// (audit: 400 MiB of event stream took `listen --transport urlsession` to 688 MB).
@Suite("URLSessionTransport bounds what it buffers of a stream")
struct URLSessionTransportBufferTests {
    /// Small, so that the flood is many times the bound; FoundationNetworking's chunks are 16 KiB at most.
    static let limit = 256 << 10
    /// What a flooding stream offers: 256 times the bound.
    static let flood = 64 << 20

    static func configuration(_ url: URL) -> PushClientConfiguration {
        var configuration = PushClientConfiguration(
            serverURL: url, credentials: PushCredentials(token: "token", secret: "secret"))
        configuration.backoff = BackoffPolicy(base: .milliseconds(20), maximum: .milliseconds(100),
                                              stableAfter: .seconds(30))
        return configuration
    }

    static func transport(_ url: URL) throws -> URLSessionTransport {
        try URLSessionTransport(configuration: configuration(url), sessionConfiguration: .ephemeral,
                                maximumBufferedBytes: limit)
    }

    /// A client over ``transport(_:)`` that logs only critical messages.
    static func client(_ configuration: PushClientConfiguration, _ url: URL) throws -> PushClient {
        var logger = Logger(label: "test.client")
        logger.logLevel = .critical
        return try PushClient(configuration: configuration, transport: Self.transport(url), logger: logger)
    }

    static let streamRequest = TransportRequest(method: .get, path: "/v1/stream", headerFields: [:], body: nil)

    @Test("a server flooding a stream nobody reads: the stream ends with bufferLimitExceeded, at most the bound held")
    func floodWithoutReading() async throws {
        let relay = try await FakeFloodingRelay.start([.flood(prefix: ": welcome\n\n", bytes: Self.flood)])
        let transport = try Self.transport(relay.serverURL)
        var read = 0
        var failure: (any Error)?
        do {
            try await transport.withStreamingResponse(to: Self.streamRequest, idleTimeout: .seconds(60)) {
                head, reader in
                #expect(head.status == 200)
                // Read nothing until the transport has given the stream up (without the bound it never does, and
                // this wait fails).
                try await relay.waitUntilClosed(stream: 0)
                while let chunk = try await reader.next() { read += chunk.count }
            }
        } catch {
            failure = error
        }
        let error = try #require(failure as? PushClientError, "\(String(describing: failure))")
        #expect(error.code == .bufferLimitExceeded)
        // Everything delivered before the cut is read, in order; all of it was buffered at once.
        #expect(read > 0)
        #expect(read <= Self.limit)
        #expect(transport.bufferedBytesHighWaterMark <= Self.limit)
        // The flood got past the bound. How much more of it the socket took before the cut is not checked: curl
        // goes on reading until the cancellation reaches it, and on a stalled machine (CI, load 6) that was the
        // whole 64 MiB. The fake never closes a stream, so `waitUntilClosed` above already proves the client cut it.
        let sent = try #require(relay.streams.first).bytesWritten
        #expect(sent > Self.limit)
        await transport.shutdown()
        try await relay.shutdown()
    }

    @Test("a stream carrying many times the bound, no faster than it is read, is not cut")
    func pacedStreamPasses() async throws {
        let relay = try await FakeFloodingRelay.start([.quiet])
        let transport = try Self.transport(relay.serverURL)
        let line = ":" + String(repeating: "y", count: 100 << 10) + "\n"
        let rounds = 24  // 2.4 MiB in all, nearly ten times the bound.
        try await transport.withStreamingResponse(to: Self.streamRequest, idleTimeout: .seconds(60)) {
            head, reader in
            #expect(head.status == 200)
            var pending = ": welcome\n\n".utf8.count
            for round in 0...rounds {
                while pending > 0 {
                    let chunk = try #require(try await reader.next(), "the stream ended in round \(round)")
                    pending -= chunk.count
                }
                #expect(pending == 0)
                if round < rounds {
                    try await relay.write(line, toStream: 0)
                    pending = line.utf8.count
                }
            }
        }
        #expect(transport.bufferedBytesHighWaterMark <= Self.limit)
        #expect(relay.streams.count == 1)
        await transport.shutdown()
        try await relay.shutdown()
    }

    @Test("PushClient over URLSession: a flood while the handler works ends the stream; the client reconnects, resuming after the handled message")
    func clientReconnectsAfterOverflow() async throws {
        let event = #"id: 1603214613006763"# + "\n" + #"data: {"gcm.message_id": "1603214613006763"}"# + "\n\n"
        let relay = try await FakeFloodingRelay.start([
            .flood(prefix: ": welcome\n\n" + event, bytes: Self.flood), .quiet,
        ])
        let client = try Self.client(Self.configuration(relay.serverURL), relay.serverURL)
        let handled = HandledMessages()
        let states = client.states()
        try await PushClientNetworkTests.withRunningClient(client, onMessage: { message in
            // The handler is slow: the first stream floods on until the transport gives it up.
            try await relay.waitUntilClosed(stream: 0)
            try await handled.handle(message)
        }) {
            _ = try await states.until("a reconnection") { if case .reconnecting = $0 { true } else { false } }
            _ = try await states.until("connected again") { if case .connected = $0 { true } else { false } }
        }
        #expect(await handled.ids == ["1603214613006763"])
        let streams = relay.streams
        #expect(streams.count >= 2)
        #expect(streams.first?.lastEventID == nil)
        #expect(streams.dropFirst().first?.lastEventID == "1603214613006763")
        await client.transport.shutdown()
        try await relay.shutdown()
    }

    @Test("PushClient over URLSession against the fake relay: messages at a normal rate arrive once, no reconnection")
    func normalStream() async throws {
        let relay = try await FakeRelayServer.start()
        var configuration = PushClientConfiguration(serverURL: relay.serverURL, registration: relay.registration)
        configuration.heartbeatTimeout = .seconds(20)
        let client = try Self.client(configuration, relay.serverURL)
        let handled = HandledMessages()
        let states = client.states()
        var ids: [String] = []
        try await PushClientNetworkTests.withRunningClient(client, handled: handled) {
            _ = try await states.until("connected") { if case .connected = $0 { true } else { false } }
            for order in 1...5 { ids.append(try await relay.sendScenario(to: Scenario.token, orderID: order)) }
            let expected = ids
            try await withTimeout(20, "five messages handled") {
                while await handled.ids != expected { try await Task.sleep(for: .milliseconds(10)) }
            }
        }
        #expect(relay.recorded.lastEventIDs.count == 1)
        #expect(Set(relay.recorded.acknowledged) == Set(ids))
        await client.transport.shutdown()
        try await relay.shutdown()
    }
}
#endif
