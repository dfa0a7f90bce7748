import Foundation
import HTTPTypes
import Testing

@testable import PushRelayClient

/// ``FailoverTransport`` over fake transports: the order relays are tried in, what moves the client on (no
/// connection, 502-504) and what does not (any other answer, a stream that breaks after its answer began).
@Suite("FailoverTransport")
struct FailoverTransportTests {
    /// A fake relay: answers `status`, or fails to connect (`reachable == false`); counts the requests it got.
    final class FakeTransport: PushTransport, @unchecked Sendable {
        let name: String
        private let state: LockedValue<(reachable: Bool, status: Int, requests: Int)>

        init(_ name: String, reachable: Bool = true, status: Int = 200) {
            self.name = name
            self.state = LockedValue((reachable, status, 0))
        }

        var requests: Int { state.withLockedValue { $0.requests } }
        func set(reachable: Bool, status: Int = 200) { state.withLockedValue { $0.reachable = reachable; $0.status = status } }

        private func answer() throws -> Int {
            let (reachable, status) = state.withLockedValue { state in
                state.requests += 1
                return (state.reachable, state.status)
            }
            guard reachable else { throw PushClientError(code: .connectionClosed, message: "\(name): connection refused") }
            return status
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            TransportResponse(status: try answer(), headerFields: [:], body: Array(name.utf8))
        }

        func withStreamingResponse(
            to request: TransportRequest, idleTimeout: Duration,
            _ body: (_ head: TransportResponseHead, _ reader: TransportBodyReader) async throws -> Void
        ) async throws {
            let status = try answer()
            let name = self.name
            let chunks = LockedValue([Array(name.utf8)])
            let reader = TransportBodyReader { chunks.withLockedValue { $0.isEmpty ? nil : $0.removeFirst() } }
            try await body(TransportResponseHead(status: status, headerFields: [:]), reader)
        }

        func shutdown() async {}
    }

    static let request = TransportRequest(method: .get, path: "/v1/stream", headerFields: [:], body: nil)

    @Test("a relay that cannot be reached is skipped; the one that answered stays current")
    func skipsUnreachableAndSticks() async throws {
        let a = FakeTransport("a", reachable: false), b = FakeTransport("b"), c = FakeTransport("c")
        let failover = FailoverTransport(transports: [a, b, c])
        let first = try await failover.send(Self.request)
        #expect(String(decoding: first.body, as: UTF8.self) == "b")
        #expect(failover.currentIndex == 1)
        a.set(reachable: true)
        let second = try await failover.send(Self.request)
        #expect(String(decoding: second.body, as: UTF8.self) == "b", "stays on b while it answers")
        #expect(a.requests == 1 && b.requests == 2 && c.requests == 0)
        b.set(reachable: false)
        let third = try await failover.send(Self.request)
        #expect(String(decoding: third.body, as: UTF8.self) == "c", "in order after b")
        #expect(failover.currentIndex == 2)
    }

    @Test("502, 503 and 504 move on; the last relay's answer is returned whatever it is; 401 and 404 do not move")
    func unavailableStatusesMoveOn() async throws {
        let a = FakeTransport("a", status: 503), b = FakeTransport("b", status: 502)
        let failover = FailoverTransport(transports: [a, b])
        let answer = try await failover.send(Self.request)
        #expect(answer.status == 502 && String(decoding: answer.body, as: UTF8.self) == "b")
        #expect(a.requests == 1 && b.requests == 1)
        a.set(reachable: true, status: 401)
        b.set(reachable: true, status: 401)
        let refused = try await failover.send(Self.request)
        #expect(refused.status == 401)
        #expect(a.requests + b.requests == 3, "a 401 is an answer: one request")
    }

    @Test("every relay unreachable: the last connection error, once around the list")
    func allUnreachable() async throws {
        let a = FakeTransport("a", reachable: false), b = FakeTransport("b", reachable: false)
        let failover = FailoverTransport(transports: [a, b])
        let error = await #expect(throws: PushClientError.self) { try await failover.send(Self.request) }
        #expect(error?.code == .connectionClosed && error?.message == "b: connection refused")
        #expect(a.requests == 1 && b.requests == 1)
    }

    @Test("streams: an unreachable relay is skipped; an error after the answer began is the caller's, not retried")
    func streams() async throws {
        let a = FakeTransport("a", reachable: false), b = FakeTransport("b"), c = FakeTransport("c")
        let failover = FailoverTransport(transports: [a, b, c])
        var got: [String] = []
        try await failover.withStreamingResponse(to: Self.request, idleTimeout: .seconds(1)) { head, reader in
            #expect(head.status == 200)
            while let chunk = try await reader.next() { got.append(String(decoding: chunk, as: UTF8.self)) }
        }
        #expect(got == ["b"])
        struct Broken: Error {}
        await #expect(throws: Broken.self) {
            try await failover.withStreamingResponse(to: Self.request, idleTimeout: .seconds(1)) { _, _ in throw Broken() }
        }
        #expect(c.requests == 0, "a stream broken by its reader does not move to the next relay")
        #expect(failover.currentIndex == 1)
    }

    @Test("the configuration's URLs make one transport each, in order; different paths are refused")
    func fromConfiguration() throws {
        var configuration = PushClientConfiguration(
            serverURL: URL(string: "http://127.0.0.1:1/relay")!,
            credentials: PushCredentials(token: nil, secret: "s"))
        configuration.fallbackServerURLs = [URL(string: "http://127.0.0.2:2/relay")!, URL(string: "http://[::1]:3/relay/")!]
        let made = LockedValue<[URL]>([])
        _ = try FailoverTransport(configuration: configuration) { single in
            #expect(single.fallbackServerURLs.isEmpty)
            made.withLockedValue { $0.append(single.serverURL) }
            return FakeTransport(single.serverURL.absoluteString)
        }
        #expect(made.withLockedValue { $0 } == configuration.serverURLs)
        configuration.fallbackServerURLs = [URL(string: "http://127.0.0.2:2/other")!]
        #expect(throws: PushClientError.self) {
            _ = try FailoverTransport(configuration: configuration) { FakeTransport($0.serverURL.absoluteString) }
        }
    }
}
