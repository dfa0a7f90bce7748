/// A complete HTTP answer to an FCM send, independent of any HTTP library: the server turns it into its response
/// type (status, `content-type`, optional `retry-after`, body).
public struct FCMHTTPAnswer: Sendable, Hashable {
    /// The status code.
    public var status: Int
    /// The `content-type` header value.
    public var contentType: String
    /// The body bytes.
    public var body: [UInt8]
    /// The `retry-after` header in seconds, when set.
    public var retryAfterSeconds: Int?
    /// The HTTP/1.1 status line's reason phrase when it is not the status's usual one: FCM's `401` without a key reads
    /// "The request was missing an Authentication Key (FCM Token). …", which clients that show the reason phrase
    /// print (HTTP/2 has no reason phrase).
    public var reasonPhrase: String?

    /// An answer.
    public init(status: Int, contentType: String, body: [UInt8], retryAfterSeconds: Int? = nil, reasonPhrase: String? = nil) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.retryAfterSeconds = retryAfterSeconds
        self.reasonPhrase = reasonPhrase
    }

    /// `application/json; charset=UTF-8`.
    public static let jsonContentType = "application/json; charset=UTF-8"
    /// `text/plain; charset=UTF-8`.
    public static let plainTextContentType = "text/plain; charset=UTF-8"

    /// `200` with a token-send response, JSON or plain text by the request's encoding.
    public init(_ response: FCMSendResponse, encoding: FCMSendRequest.Encoding) {
        switch encoding {
        case .json: self.init(status: 200, contentType: Self.jsonContentType, body: response.jsonBody())
        case .form:
            self.init(status: 200, contentType: Self.plainTextContentType, body: Array(response.plainTextBody().utf8))
        }
    }

    /// `200` with a topic-send response, JSON or plain text by the request's encoding.
    public init(_ response: FCMTopicResponse, encoding: FCMSendRequest.Encoding) {
        switch encoding {
        case .json: self.init(status: 200, contentType: Self.jsonContentType, body: response.jsonBody())
        case .form:
            self.init(status: 200, contentType: Self.plainTextContentType, body: Array(response.plainTextBody().utf8))
        }
    }

    /// `200` with a device group's response (always JSON: only a JSON send addresses a group).
    public init(_ response: FCMDeviceGroupResponse) {
        self.init(status: 200, contentType: Self.jsonContentType, body: response.jsonBody())
    }

    /// The answer for an error that ends the request (what `FCMSendRequest.parse` throws, an auth failure, or a
    /// store that cannot commit):
    /// - `400` bad request: the plain-text reason (`Field "to" must be a JSON string: 5`);
    /// - `400` `InvalidParameters`: `{"error":"InvalidParameters: <reason>"}` (JSON) or `Error=…` (plain text);
    /// - `401`: FCM's HTML page (without a key, its status text also as the reason phrase);
    /// - `503` `Unavailable` / `500` `InternalServerError`: the code as text, with `Retry-After` when given.
    /// - any other result error: `200` with the code as a topic-style body (`{"error":"…"}`).
    public init(error: FCMError, encoding: FCMSendRequest.Encoding, retryAfterSeconds: Int? = nil) {
        if error.isRequestLevel {
            self.init(
                status: error.httpStatus,
                contentType: error.responseContentType,
                body: Array(error.responseBody.utf8),
                retryAfterSeconds: retryAfterSeconds,
                reasonPhrase: error.code == .authentication ? error.reason : nil
            )
            return
        }
        switch error.code {
        case .unavailable, .internalServerError, .quotaExceeded:
            self.init(
                status: error.httpStatus,
                contentType: Self.plainTextContentType,
                body: Array(error.resultString.utf8),
                retryAfterSeconds: retryAfterSeconds
            )
        default:
            var answer = FCMHTTPAnswer(FCMTopicResponse.error(error), encoding: encoding)
            answer.status = error.httpStatus
            answer.retryAfterSeconds = retryAfterSeconds
            self = answer
        }
    }
}
