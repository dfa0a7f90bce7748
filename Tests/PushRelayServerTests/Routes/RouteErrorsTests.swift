import HTTPTypes
import NIOCore
import PushRelayHTTP
import Testing

@testable import PushRelayServer

/// The token endpoint's errors that the transport or the store cause: a store that cannot answer is the server's
/// fault, said so (`temporarily_unavailable`, which google-auth retries), not the request's (`invalid_request`).
@Suite("Routes: /token's transport and store errors")
struct RouteErrorsTests {
    private static func oauthCode(_ error: HTTPError) -> (status: Int, body: String) {
        let request = HTTPRequest(method: .post, scheme: "http", authority: "x", path: "/token")
        let response = RouteErrors.oauth(error, request)
        guard case .bytes(let body) = response.body else { return (response.head.status.code, "") }
        return (response.head.status.code, String(buffer: body))
    }

    @Test("503 → temporarily_unavailable, 500 → server_error, 413/408 → invalid_request")
    func codesFollowWhoseFaultItIs() {
        let unavailable = Self.oauthCode(HTTPError(.serviceUnavailable, "the store cannot answer (unavailable); retry later"))
        #expect(unavailable.status == 503)
        #expect(unavailable.body.contains(#""error":"temporarily_unavailable""#), "\(unavailable.body)")
        let failed = Self.oauthCode(HTTPError(.internalServerError, "boom"))
        #expect(failed.status == 500 && failed.body.contains(#""error":"server_error""#), "\(failed.body)")
        for status in [HTTPResponse.Status.contentTooLarge, .requestTimeout] {
            let refused = Self.oauthCode(HTTPError(status, "no"))
            #expect(refused.status == status.code && refused.body.contains(#""error":"invalid_request""#), "\(refused.body)")
        }
    }
}
