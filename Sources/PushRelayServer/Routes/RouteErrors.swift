import HTTPTypes
import NIOCore
import PushRelayCore
import PushRelayHTTP
import PushRelayStore

/// How each API's clients read the errors the transport answers for its routes itself — a body over the route's
/// limit (`413`), a body not received in time (`408`) — and the plain ``HTTPError``s its handlers throw: in the API's
/// own error format, like the rest of its answers, instead of the transport's plain text
/// (``HTTPRouter/add(_:_:maxBodyBytes:gate:errors:_:)``). The FCM legacy send keeps plain text, as FCM answers it.
enum RouteErrors {
    /// The device API and the Instance ID routes: `{"error": "INVALID_ARGUMENT", "message": "…"}`.
    static let json: HTTPErrorRenderer = HTTPRouter.errors { error in
        JSONResponse.error(error.status, code(of: error), message(of: error))
    }

    /// FCM HTTP v1: a `google.rpc.Status` (`{"error": {"code": 413, "message": "…", "status": "INVALID_ARGUMENT"}}`).
    static let v1: HTTPErrorRenderer = HTTPRouter.errors { error in
        V1ProjectRoutes.answer(FCMv1Error(httpStatus: error.status.code, status: code(of: error), message: message(of: error)))
    }

    /// The OAuth 2.0 token endpoint: `{"error": "invalid_request", "error_description": "…"}` (RFC 6749 §5.2), with
    /// the transport's status; a server that cannot answer says so (`temporarily_unavailable` with `503`,
    /// `server_error` with another `5xx`) instead of blaming the request.
    static let oauth: HTTPErrorRenderer = HTTPRouter.errors { error in
        let code: OAuthError.Code =
            switch error.status.code {
            case 503: .temporarilyUnavailable
            case 500...: .serverError
            default: .invalidRequest
            }
        let answer = TokenRoute.answer(OAuthError(code: code, message: message(of: error)))
        return HTTPServerResponse(status: error.status, headerFields: answer.head.headerFields, body: answer.body)
    }

    /// The canonical code of an error's status: a request that took too long is `DEADLINE_EXCEEDED`, a store that
    /// cannot answer `UNAVAILABLE`, a server failure `INTERNAL`, anything else the client sent `INVALID_ARGUMENT`.
    static func code(of error: HTTPError) -> String {
        switch error.status.code {
        case 408: "DEADLINE_EXCEEDED"
        case 503: "UNAVAILABLE"
        case 500...: "INTERNAL"
        default: "INVALID_ARGUMENT"
        }
    }

    private static func message(of error: HTTPError) -> String {
        error.message.isEmpty ? error.status.reasonPhrase : error.message
    }
}

extension RouteErrors {
    /// How every route answers a store that cannot serve it (disk full, PostgreSQL unreachable, the node closing):
    /// `503` with `Retry-After`, in the route's format (``HTTPRouter/translateErrors(_:)``), as `/fcm/send` answers
    /// `Unavailable`; nothing was stored, and the client retries. Other errors stay a `500`.
    static func storeUnavailable(retryAfterSeconds: Int) -> @Sendable (any Error) -> HTTPError? {
        { error in
            guard let error = error as? StoreError, error.code == .unavailable || error.code == .closed else { return nil }
            return HTTPError(
                .serviceUnavailable, "the store cannot answer (\(error.code)); retry later",
                headerFields: [.retryAfter: String(retryAfterSeconds)])
        }
    }
}
