import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PushRelayHTTP

/// A relay that answers each `GET /v1/stream` as its plan says: refused with a status and `Retry-After` (a relay
/// draining, or a proxy or load balancer in front of it), a `200` that is not an event stream (a captive portal's
/// page), or a real event stream; and each `POST /v1/register` as its registration plan says (credentials, a
/// refusal, a page). Acknowledgements get `200 {}`.
///
/// It runs on PushRelayHTTP's `HTTPServer` on loopback, port 0, which speaks HTTP/2 (prior knowledge, as
/// `HTTP2Transport` does on `http://` URLs) and HTTP/1.1 on the same port: each transport of the client meets the
/// same answers over the protocol it speaks, and the fake records which one carried each stream request.
final class FakeStreamAnswerRelay: Sendable {
    enum Answer: Sendable {
        /// `status` with a JSON error body and, when given, `Retry-After: <retryAfter>`.
        case refuse(status: Int, retryAfter: String?)
        /// `200` with `Content-Type: <contentType>` (none when `nil`) and `body`, then the end of the body.
        case page(contentType: String?, body: String)
        /// `200 text/event-stream`: `: welcome`, one event with id `eventID`, then open until the client leaves.
        case eventStream(eventID: String)
        /// `200 {"token": <token>, "secret": <secret>}`: a registration's answer.
        case credentials(token: String, secret: String)
        /// `answer`, after `delay` (a relay that is slow to answer, its connection's SETTINGS sent at once).
        indirect case delayed(Duration, Answer)
    }

    private let server: HTTPServer
    private let port: Int
    private let versions: NIOLockedValueBox<[HTTPProtocolVersion]>
    private let registrations: NIOLockedValueBox<Int>

    var serverURL: URL { URL(string: "http://127.0.0.1:\(port)")! }
    /// The protocol of each stream request so far, in order.
    var streamRequests: [HTTPProtocolVersion] { versions.withLockedValue { $0 } }
    /// How many registration requests came so far.
    var registerRequests: Int { registrations.withLockedValue { $0 } }

    private init(
        server: HTTPServer, port: Int, versions: NIOLockedValueBox<[HTTPProtocolVersion]>,
        registrations: NIOLockedValueBox<Int>
    ) {
        self.server = server
        self.port = port
        self.versions = versions
        self.registrations = registrations
    }

    /// Starts the fake on 127.0.0.1, port 0; stream request *n* gets `plan[n]`, registration request *n*
    /// `registration[n]` (the last one again when they run out).
    static func start(
        _ plan: [Answer], registration: [Answer] = [.credentials(token: "token", secret: "secret")]
    ) async throws -> FakeStreamAnswerRelay {
        precondition(!plan.isEmpty && !registration.isEmpty)
        let versions = NIOLockedValueBox<[HTTPProtocolVersion]>([])
        let registrations = NIOLockedValueBox(0)
        let router = HTTPRouter()
        router.add(.get, "/v1/stream", .async { request in
            let index = versions.withLockedValue { versions in
                versions.append(request.protocolVersion)
                return versions.count - 1
            }
            return try await Self.response(plan[min(index, plan.count - 1)])
        })
        router.add(.post, "/v1/ack", .collected { _ in Self.json(.ok, "{}") })
        router.add(.post, "/v1/register", .collected { _ in
            let index = registrations.withLockedValue { count in
                count += 1
                return count - 1
            }
            return try await Self.response(registration[min(index, registration.count - 1)])
        })
        var logger = Logger(label: "test.fake-stream-answer-relay")
        logger.logLevel = .critical
        let server = HTTPServer(listeners: [.init(host: "127.0.0.1", port: 0)], responder: router, logger: logger)
        let port = try await server.start()[0].port!
        return FakeStreamAnswerRelay(server: server, port: port, versions: versions, registrations: registrations)
    }

    func shutdown() async {
        await server.shutdown()
    }

    private static func response(_ answer: Answer) async throws -> HTTPServerResponse {
        switch answer {
        case .delayed(let delay, let answer):
            try await Task.sleep(for: delay)
            return try await response(answer)
        case .refuse(let status, let retryAfter):
            var response = json(HTTPResponse.Status(code: status), #"{"error":"UNAVAILABLE","message":"later"}"#)
            if let retryAfter { response.head.headerFields[.retryAfter] = retryAfter }
            return response
        case .page(let contentType, let body):
            var fields = HTTPFields()
            if let contentType { fields[.contentType] = contentType }
            return HTTPServerResponse(status: .ok, headerFields: fields, body: .bytes(ByteBuffer(string: body)))
        case .credentials(let token, let secret):
            return json(.ok, #"{"token":"\#(token)","secret":"\#(secret)"}"#)
        case .eventStream(let eventID):
            let text = ": welcome\n\nid: \(eventID)\ndata: {\"gcm.message_id\": \"\(eventID)\"}\n\n"
            return HTTPServerResponse(
                status: .ok, headerFields: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
                body: .stream { writer in
                    try await writer.write(writer.allocator.buffer(string: text))
                    await writer.waitUntilClosed()
                })
        }
    }

    private static func json(_ status: HTTPResponse.Status, _ text: String) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headerFields: [.contentType: "application/json"],
                           body: .bytes(ByteBuffer(string: text)))
    }
}
