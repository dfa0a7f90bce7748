import HTTPTypes
import NIOCore
import PushRelayHTTP

/// Cross-origin access for web apps to the device routes (`/v1/register`, `/v1/stream`, `/v1/ack`,
/// `/v1/stream-ticket`), from the origins of ``PushRelayConfiguration/corsAllowedOrigins`` only (none by default).
///
/// A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) from an allowed origin answers 204 with
/// the methods and the request headers the device API uses (`authorization`, `content-type`, `last-event-id`); from
/// any other origin it answers 403 without CORS headers, so the browser refuses the request. Every answer of a
/// device route to an allowed origin carries `Access-Control-Allow-Origin` (the origin itself, never `*`, so that
/// `Vary: Origin` keeps caches honest). Credentials travel in `Authorization` (or a stream ticket), never cookies.
struct CORSPolicy: Sendable {
    /// The allowed origins as browsers write `Origin` (`https://shop.example.com`); `*` allows any.
    let allowedOrigins: Set<String>

    static let allowedHeaders = "authorization, content-type, last-event-id"
    /// How long a browser may cache a preflight answer, in seconds.
    static let maxAge = "600"

    init(allowedOrigins: [String]) {
        self.allowedOrigins = Set(allowedOrigins)
    }

    /// The request's `Origin` when it is allowed.
    func allowedOrigin(of head: HTTPRequest) -> String? {
        guard let origin = head.headerFields[.origin], !origin.isEmpty else { return nil }
        return allowedOrigins.contains("*") || allowedOrigins.contains(origin) ? origin : nil
    }

    /// `handler`, with `Access-Control-Allow-Origin` added to its answers to an allowed origin.
    func wrap(
        _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse
    ) -> @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse {
        guard !allowedOrigins.isEmpty else { return handler }
        return { request in decorate(try await handler(request), for: request.head) }
    }

    /// An event-loop (`.promised`) `handler`, with `Access-Control-Allow-Origin` added to its answers to an allowed
    /// origin.
    func wrap(
        _ handler: @escaping @Sendable (HTTPServerRequest, ByteBuffer, HTTPResponsePromise) -> Void
    ) -> @Sendable (HTTPServerRequest, ByteBuffer, HTTPResponsePromise) -> Void {
        guard !allowedOrigins.isEmpty else { return handler }
        return { request, body, promise in
            let answer = HTTPResponsePromise(eventLoop: promise.eventLoop) { result in
                promise.complete(result.map { decorate($0, for: request.head) })
            }
            handler(request, body, answer)
        }
    }

    /// `renderer`, with `Access-Control-Allow-Origin` added to its answers to an allowed origin: the route's errors
    /// (a body over the limit, an error its handler throws) reach a web app's `fetch` like its other answers,
    /// instead of failing as an opaque network error.
    func errors(_ renderer: @escaping HTTPErrorRenderer) -> HTTPErrorRenderer {
        guard !allowedOrigins.isEmpty else { return renderer }
        return { error, head in decorate(renderer(error, head), for: head) }
    }

    /// `response` with `Access-Control-Allow-Origin: <origin>` and `Vary: Origin` when the request's origin is
    /// allowed.
    private func decorate(_ response: HTTPServerResponse, for head: HTTPRequest) -> HTTPServerResponse {
        guard let origin = allowedOrigin(of: head) else { return response }
        var response = response
        response.head.headerFields[.accessControlAllowOrigin] = origin
        response.head.headerFields.append(HTTPField(name: .vary, value: "Origin"))
        return response
    }

    /// `OPTIONS` on a device route served for `methods`: the preflight answer, naming those methods.
    func preflight(
        allowing methods: [HTTPRequest.Method]
    ) -> @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse {
        let names = methods.map(\.rawValue).joined(separator: ", ")
        return { request in self.preflight(request, methods: names) }
    }

    private func preflight(_ request: HTTPServerRequest, methods: String) -> HTTPServerResponse {
        guard request.head.headerFields[.origin] != nil else {
            // Not a CORS request: say what the route allows.
            var fields = HTTPFields()
            fields[.allow] = methods + ", OPTIONS"
            return HTTPServerResponse(status: .noContent, headerFields: fields)
        }
        guard let origin = allowedOrigin(of: request.head) else {
            return JSONResponse.error(.forbidden, "PERMISSION_DENIED", "origin not allowed (cors_allowed_origins)")
        }
        var fields = HTTPFields()
        fields[.accessControlAllowOrigin] = origin
        fields[.accessControlAllowMethods] = methods
        fields[.accessControlAllowHeaders] = Self.allowedHeaders
        fields[.accessControlMaxAge] = Self.maxAge
        fields[.vary] = "Origin"
        return HTTPServerResponse(status: .noContent, headerFields: fields)
    }
}
