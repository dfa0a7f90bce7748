import Foundation
import HTTPTypes
import Logging
import Testing

@testable import PushRelayClient

/// `Retry-After` on the relay's refusals: read in both forms, carried by ``PushClientError/retryAfter`` from the
/// stream and from the calls that are not the stream (register, ack, unregister).
@Suite("Retry-After")
struct RetryAfterTests {
    /// Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example date.
    static let example = Date(timeIntervalSince1970: 784_111_777)

    @Test("delta-seconds: digits only; anything else is not a delay")
    func seconds() {
        #expect(RetryAfter.delay("2", now: Self.example) == .seconds(2))
        #expect(RetryAfter.delay(" 120 ", now: Self.example) == .seconds(120))
        #expect(RetryAfter.delay("0", now: Self.example) == .zero)
        #expect(RetryAfter.delay("99999999999999999999999", now: Self.example) == .seconds(Int64(Int32.max)))
        for bad in ["", "-1", "1.5", "2s", "soon", "0x10"] {
            #expect(RetryAfter.delay(bad, now: Self.example) == nil, "\(bad)")
        }
    }

    @Test("an HTTP-date in its three forms counts from now; a date in the past is zero")
    func httpDate() {
        let now = Self.example - 90
        #expect(RetryAfter.delay("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == .seconds(90))
        #expect(RetryAfter.delay("Sunday, 06-Nov-94 08:49:37 GMT", now: now) == .seconds(90))
        #expect(RetryAfter.delay("Sun Nov  6 08:49:37 1994", now: now) == .seconds(90))
        #expect(RetryAfter.delay("Sun, 06 Nov 1994 08:49:37 GMT", now: Self.example + 5) == .zero)
        #expect(RetryAfter.delay("Sun, 06 Nov 1994 08:49:37 CET", now: now) == nil)
    }

    @Test("a 503 or 429 carries its Retry-After in the error and its message; other statuses do not")
    func statusesThatCarryIt() throws {
        let body = Array(#"{"error":"UNAVAILABLE","message":"later"}"#.utf8)
        #expect {
            try RelayAPI.check(503, headerFields: [.retryAfter: "2"], body: body, operation: "stream")
        } throws: { error in
            guard let error = error as? PushClientError else { return false }
            return error.code == .httpStatus && error.status == 503 && error.retryAfter == .seconds(2)
                && error.message == "stream: status 503: UNAVAILABLE (later) (Retry-After 2 s)"
        }
        #expect {
            try RelayAPI.check(429, headerFields: [.retryAfter: "Sun, 06 Nov 1994 08:49:37 GMT"], body: [],
                               operation: "register", now: Self.example - 30)
        } throws: { ($0 as? PushClientError)?.retryAfter == .seconds(30) }
        #expect {
            try RelayAPI.check(500, headerFields: [.retryAfter: "2"], body: [], operation: "ack")
        } throws: { ($0 as? PushClientError).map { $0.retryAfter == nil && $0.status == 500 } ?? false }
        #expect {
            try RelayAPI.check(503, headerFields: [.retryAfter: "later"], body: [], operation: "ack")
        } throws: { ($0 as? PushClientError).map { $0.retryAfter == nil && $0.status == 503 } ?? false }
    }

    /// Answers every request with `status` and `headerFields`.
    final class FakeRefusingTransport: PushTransport {
        let status: Int
        let headerFields: HTTPFields

        init(status: Int, headerFields: HTTPFields) {
            self.status = status
            self.headerFields = headerFields
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            TransportResponse(status: status, headerFields: headerFields, body: Array(#"{"error":"x"}"#.utf8))
        }

        func withStreamingResponse(
            to request: TransportRequest, idleTimeout: Duration,
            _ body: (_ head: TransportResponseHead, _ reader: TransportBodyReader) async throws -> Void
        ) async throws {
            let head = TransportResponseHead(status: status, headerFields: headerFields)
            try await body(head, TransportBodyReader { nil })
        }

        func shutdown() async {}
    }

    @Test("register() and unregister() refused with Retry-After: the app reads the wait in the error")
    func nonStreamCalls() async throws {
        let configuration = PushClientConfiguration(
            serverURL: URL(string: "http://relay.test")!,
            registration: .init(project: "shop", app: "app", platform: "linux", clientKey: "k"))
        var logger = Logger(label: "test.client")
        logger.logLevel = .critical
        let client = try PushClient(
            configuration: configuration,
            transport: FakeRefusingTransport(status: 429, headerFields: [.retryAfter: "30"]), logger: logger)
        await #expect {
            try await client.register()
        } throws: { ($0 as? PushClientError).map { $0.status == 429 && $0.retryAfter == .seconds(30) } ?? false }

        var registered = configuration
        registered.credentials = PushCredentials(token: "t", secret: "s")
        let unavailable = try PushClient(
            configuration: registered,
            transport: FakeRefusingTransport(status: 503, headerFields: [.retryAfter: "7"]), logger: logger)
        await #expect {
            try await unavailable.unregister()
        } throws: { ($0 as? PushClientError).map { $0.status == 503 && $0.retryAfter == .seconds(7) } ?? false }
    }
}
