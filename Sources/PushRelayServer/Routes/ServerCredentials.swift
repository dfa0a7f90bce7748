import HTTPTypes
import PushRelayCore
import PushRelayHTTP
import PushRelayStore

/// The credentials of the sender APIs beside the send, the Instance ID routes and the device-group API:
/// `Authorization: key=<server key>`, or, as v1 senders call them, `Authorization: Bearer <access token>` with the
/// header `access_token_auth: true` (Google's marker for an OAuth 2 bearer token on these legacy APIs).
enum ServerCredentials {
    /// The project the request's credentials authenticate, or nil (answer 401).
    static func project(of request: HTTPServerRequest, store: any PushStore) async throws -> Project? {
        guard let header = request.head.headerFields.onlyValue(for: .authorization) else { return nil }
        if let key = AuthorizationHeader.serverKey(header) {
            return try await store.authenticateServerKey(String(key))
        }
        if let token = AuthorizationHeader.bearer(header),
            request.head.headerFields.firstValue(for: Self.accessTokenAuth)?.lowercased() == "true"
        {
            return try await store.authenticateAccessToken(String(token))
        }
        return nil
    }

    /// `access_token_auth: true`.
    static let accessTokenAuth = HTTPField.Name("access_token_auth")!
}
