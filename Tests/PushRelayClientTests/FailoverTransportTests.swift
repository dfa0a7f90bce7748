import Foundation
import HTTPTypes
import Testing

@testable import PushRelayClient

/// ``FailoverTransport`` over fake transports: the order relays are tried in, what moves the client on (no
/// connection, 502-504) and what does not (any other answer, a stream that breaks after its answer began).
@Suite("FailoverTransport")
struct FailoverTransportTests {
    /// A fake relay: answers `status` with `Retry-After: <retryAfter>` when given, fails to connect
    /// (`reachable == false`), or throws `failure` before any answer (a transport that cannot make the request);
    /// counts the requests it got.
    final class FakeTransport: PushTransport, @unchecked Sendable {
        let name: String
        private let state: LockedValue<(reachable: Bool, status: Int, retryAfter: String?, requests: Int)>
        private let failure: PushClientError?

        init(
            _ name: String, reachable: Bool = true, status: Int = 200, retryAfter: String? = nil,
            failure: PushClientError? = nil
        ) {
            self.name = name
            self.state = LockedValue((reachable, status, retryAfter, 0))
            self.failure = failure
        }

        var requests: Int { state.withLockedValue { $0.requests } }
        func set(reachable: Bool, status: Int = 200) { state.withLockedValue { $0.reachable = reachable; $0.status = status } }

        private func answer() throws -> (status: Int, headerFields: HTTPFields) {
            let (reachable, status, retryAfter) = state.withLockedValue { state in
                state.requests += 1
                return (state.reachable, state.status, state.retryAfter)
            }
            guard reachable else { throw PushClientError(code: .connectionClosed, message: "\(name): connection refused") }
            if let failure { throw failure }
            var fields = HTTPFields()
            if let retryAfter { fields[.retryAfter] = retryAfter }
            return (status, fields)
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            let (status, fields) = try answer()
            return TransportResponse(status: status, headerFields: fields, body: Array(name.utf8))
        }

        func withStreamingResponse(
            to request: TransportRequest, idleTimeout: Duration,
            _ body: (_ head: TransportResponseHead, _ reader: TransportBodyReader) async throws -> Void
        ) async throws {
            let (status, fields) = try answer()
            let name = self.name
            let chunks = LockedValue([Array(name.utf8)])
            let reader = TransportBodyReader { chunks.withLockedValue { $0.isEmpty ? nil : $0.removeFirst() } }
            try await body(TransportResponseHead(status: status, headerFields: fields), reader)
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

    @Test("a relay whose error no retry cures is passed over, the next one current; only if all are, that error")
    func unusableRelayIsPassedOver() async throws {
        let tls = PushClientError(code: .tlsNotConfigured, message: "TLS handler: cannot load the trusted certificates")
        let a = FakeTransport("a", failure: tls), b = FakeTransport("b")
        let failover = FailoverTransport(transports: [a, b])
        let answer = try await failover.send(Self.request)
        #expect(String(decoding: answer.body, as: UTF8.self) == "b")
        #expect(failover.currentIndex == 1)
        _ = try await failover.send(Self.request)
        #expect(a.requests == 1 && b.requests == 2, "stays on b")

        let url = PushClientError(code: .invalidConfiguration, message: "URLSession refuses the server URL")
        let none = FailoverTransport(transports: [FakeTransport("c", failure: tls), FakeTransport("d", failure: url)])
        let error = await #expect(throws: PushClientError.self) { try await none.send(Self.request) }
        #expect(error?.code == .tlsNotConfigured, "the first relay's code")
        #expect(error?.message.contains("relay 0: tlsNotConfigured") == true, "\(String(describing: error))")
        #expect(error?.message.contains("relay 1: invalidConfiguration") == true, "\(String(describing: error))")
        let alone = await #expect(throws: PushClientError.self) {
            try await FailoverTransport(transports: [FakeTransport("e", failure: tls)]).send(Self.request)
        }
        #expect(alone == tls, "a relay tried alone: its error as it came")
    }

    @Test("a relay refuses 503 with Retry-After, the last cannot be used: the refusal, with its wait, as an error")
    func refusalBeforeAnUnusableRelay() async throws {
        let a = FakeTransport("a", status: 503, retryAfter: "30")
        let b = FakeTransport("b", failure: PushClientError(code: .tlsNotConfigured, message: "TLS handler: no"))
        let failover = FailoverTransport(transports: [a, b])
        let error = await #expect(throws: PushClientError.self) { try await failover.send(Self.request) }
        #expect(error?.code == .httpStatus && error?.status == 503, "\(String(describing: error))")
        // a's 30 s, counted from its answer, in whole seconds rounded up.
        let wait = try #require(error?.retryAfter)
        #expect(wait > .zero && wait <= .seconds(30), "\(wait)")
        #expect(error?.message.contains("relay 1: tlsNotConfigured") == true, "\(String(describing: error))")
        #expect(failover.currentIndex == 0)

        // With a relay that could not be reached before it, that failure is the pass's: it may pass.
        let c = FakeTransport("c", reachable: false)
        let unreachable = FailoverTransport(transports: [a, c, b])
        let lost = await #expect(throws: PushClientError.self) { try await unreachable.send(Self.request) }
        #expect(lost?.code == .connectionClosed && lost?.message == "c: connection refused")
    }

    @Test("an error that is neither unreachable nor final ends the pass as it is: the next relay is not tried")
    func otherErrorsEndThePass() async throws {
        let page = PushClientError(code: .invalidResponse, message: "not an HTTP response")
        let a = FakeTransport("a", failure: page), b = FakeTransport("b")
        let error = await #expect(throws: PushClientError.self) {
            try await FailoverTransport(transports: [a, b]).send(Self.request)
        }
        #expect(error == page)
        #expect(b.requests == 0)
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

    // MARK: Retry-After

    /// The `Retry-After` the caller gets from one request through a new FailoverTransport over `transports`, by
    /// `send`, and by a stream through another; the relays' request counts go up by two each.
    private func retryAfter(through transports: [FakeTransport]) async throws -> (send: String?, stream: String?) {
        let sent = try await FailoverTransport(transports: transports).send(Self.request)
        var streamed: String?
        try await FailoverTransport(transports: transports).withStreamingResponse(
            to: Self.request, idleTimeout: .seconds(1)
        ) { head, _ in
            streamed = head.headerFields[.retryAfter]
        }
        return (sent.headerFields[.retryAfter], streamed)
    }

    @Test("every relay refuses 503 with Retry-After: the last answer carries the shortest wait, and its relay is next")
    func everyRelayRefusedWithRetryAfter() async throws {
        let a = FakeTransport("a", status: 503, retryAfter: "30")
        let b = FakeTransport("b", status: 503, retryAfter: "3600")
        let failover = FailoverTransport(transports: [a, b])
        let answer = try await failover.send(Self.request)
        #expect(answer.status == 503 && String(decoding: answer.body, as: UTF8.self) == "b", "the last relay's answer")
        // a's 30 s, counted from its answer, in whole seconds rounded up: 30 unless this machine stalled a second.
        let seconds = try #require(answer.headerFields[.retryAfter].flatMap { Int($0) })
        #expect((1...30).contains(seconds), "\(seconds)")
        #expect(failover.currentIndex == 0, "the next request starts with the relay whose wait ends first")

        // A stream the same way; it starts at a (current) and ends at b.
        var streamed: String?
        try await failover.withStreamingResponse(to: Self.request, idleTimeout: .seconds(1)) { head, _ in
            #expect(head.status == 503)
            streamed = head.headerFields[.retryAfter]
        }
        #expect(streamed.flatMap { Int($0) }.map { (1...30).contains($0) } ?? false, "\(String(describing: streamed))")
        #expect(a.requests == 2 && b.requests == 2)

        // An HTTP-date counts from when it came, as a delay.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let dated = FakeTransport("c", status: 503, retryAfter: formatter.string(from: Date() + 120))
        let later = FakeTransport("d", status: 503, retryAfter: "3600")
        let fromDate = try await FailoverTransport(transports: [later, dated]).send(Self.request)
        let wait = try #require(fromDate.headerFields[.retryAfter].flatMap { Int($0) })
        #expect((100...121).contains(wait), "\(wait)")
    }

    @Test("one relay refuses 503 with Retry-After and the next answers: that answer, untouched, no wait")
    func nextRelayAnswers() async throws {
        let a = FakeTransport("a", status: 503, retryAfter: "3600"), b = FakeTransport("b")
        let (sent, streamed) = try await retryAfter(through: [a, b])
        #expect(sent == nil && streamed == nil)
        #expect(a.requests == 2 && b.requests == 2)
        let failover = FailoverTransport(transports: [a, b])
        _ = try await failover.send(Self.request)
        #expect(failover.currentIndex == 1)
    }

    /// How a relay refuses without naming a wait.
    enum Untimed: String, CaseIterable, Sendable {
        case unreachable, badGateway, unavailableWithoutRetryAfter

        var transport: FakeTransport {
            switch self {
            case .unreachable: FakeTransport("a", reachable: false)
            case .badGateway: FakeTransport("a", status: 502)
            case .unavailableWithoutRetryAfter: FakeTransport("a", status: 503)
            }
        }
    }

    @Test("a relay that named no wait (unreachable, 502, 503 without Retry-After) may be back at once: no Retry-After",
          arguments: Untimed.allCases)
    func relayWithoutWait(first: Untimed) async throws {
        let a = first.transport
        let b = FakeTransport("b", status: 503, retryAfter: "60")
        let (sent, streamed) = try await retryAfter(through: [a, b])
        #expect(sent == nil && streamed == nil, "only the backoff paces the next try")
        #expect(a.requests == 2 && b.requests == 2)
    }

    @Test("a 429 after a 503 ends the pass (a 429 does not move on): it carries the shorter wait of the two")
    func rateLimitAfterUnavailable() async throws {
        let a = FakeTransport("a", status: 503, retryAfter: "5")
        let b = FakeTransport("b", status: 429, retryAfter: "60"), c = FakeTransport("c")
        let failover = FailoverTransport(transports: [a, b, c])
        let answer = try await failover.send(Self.request)
        #expect(answer.status == 429 && String(decoding: answer.body, as: UTF8.self) == "b")
        let seconds = try #require(answer.headerFields[.retryAfter].flatMap { Int($0) })
        #expect((1...5).contains(seconds), "\(seconds)")
        #expect(c.requests == 0 && failover.currentIndex == 0)
    }

    @Test("one relay alone: its answer as it came")
    func singleRelay() async throws {
        let only = FakeTransport("a", status: 503, retryAfter: "Sun, 06 Nov 1994 08:49:37 GMT")
        let (sent, streamed) = try await retryAfter(through: [only])
        #expect(sent == "Sun, 06 Nov 1994 08:49:37 GMT" && streamed == sent)
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
