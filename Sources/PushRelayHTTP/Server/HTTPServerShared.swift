import HTTPTypes
import Logging
import NIOCore

/// What every connection of one server shares: the responder, the limits, the logger.
struct HTTPServerShared: Sendable {
    let responder: any HTTPServerResponder
    let configuration: HTTPServer.Configuration
    let logger: Logger
    /// The request-body bytes held over every HTTP/2 connection (``HTTPServer/Configuration/maxBufferedBodyBytes``).
    let bodyBudget: HTTPBodyBudget

    init(responder: any HTTPServerResponder, configuration: HTTPServer.Configuration, logger: Logger) {
        self.responder = responder
        self.configuration = configuration
        self.logger = logger
        self.bodyBudget = HTTPBodyBudget(capacity: configuration.maxBufferedBodyBytes)
    }
}

/// Inbound user events the server sends down a connection's pipeline.
enum HTTPServerConnectionEvent: Sendable {
    /// Graceful shutdown: finish what is open, accept nothing new, then close.
    case drain
}

/// Runs handlers and maps their errors to responses; shared by both protocols.
enum HTTPResponder {
    /// The response for an error thrown by a handler (or raised by the transport).
    static func response(for error: any Error) -> HTTPServerResponse {
        if let error = error as? HTTPError { return response(for: error) }
        return response(for: HTTPError(.internalServerError, "internal server error"))
    }

    /// A plain-text response for an `HTTPError`.
    static func response(for error: HTTPError) -> HTTPServerResponse {
        var fields = error.headerFields
        if fields[.contentType] == nil { fields[.contentType] = "text/plain; charset=utf-8" }
        var body = ByteBuffer()
        body.writeString(error.message.isEmpty ? error.status.reasonPhrase : error.message)
        body.writeStaticString("\n")
        return HTTPServerResponse(status: error.status, headerFields: fields, body: .bytes(body))
    }

    /// The response for an error about the request `head`, as the responder reads it
    /// (``HTTPServerResponder/response(forThrown:to:)``: an ``HTTPError`` in the format of the request's route,
    /// anything else a plain `500` unless the responder translates it); plain text without a head.
    static func response(for error: any Error, to head: HTTPRequest?, by responder: any HTTPServerResponder)
        -> HTTPServerResponse
    {
        guard let head else { return response(for: error) }
        return responder.response(forThrown: error, to: head)
    }

    /// Runs an async handler, turning a thrown error into its response (in its route's format).
    static func run(
        _ handler: @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse,
        _ request: HTTPServerRequest,
        responder: any HTTPServerResponder
    ) async -> HTTPServerResponse {
        do {
            return try await handler(request)
        } catch {
            return response(for: error, to: request.head, by: responder)
        }
    }

    /// The answer of a `.promised` handler: its response, or the response for its error (in its route's format).
    static func response(
        for result: Result<HTTPServerResponse, any Error>, to head: HTTPRequest, by responder: any HTTPServerResponder
    ) -> HTTPServerResponse {
        switch result {
        case .success(let response): response
        case .failure(let error): response(for: error, to: head, by: responder)
        }
    }

    /// The response for a route that did not match, or `nil` when it matched: a `405` in the format of the path's
    /// routes, with `Allow` (``HTTPServerResponder/response(for:to:)``).
    static func response(
        forUnmatched match: HTTPRouteMatch, to head: HTTPRequest, by responder: any HTTPServerResponder
    ) -> HTTPServerResponse? {
        switch match {
        case .matched: nil
        case .notFound: response(for: .notFound)
        case .methodNotAllowed: responder.response(for: .methodNotAllowed, to: head)
        }
    }
}
