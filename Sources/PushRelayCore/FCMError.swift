public import PushRelayWire

/// Every error PushRelay reports to an FCM sender, and its one mapping to the wire: the code string of a result
/// (`MissingRegistration`), the HTTP status, and the plain-text or HTML body of a request-level answer.
///
/// Two kinds exist:
/// - **result errors** (``isRequestLevel`` is `false`): answered with `200` inside `results[]`, `Error=` or the
///   topic response's `error`; ``resultString`` is the FCM code;
/// - **request errors** (``isRequestLevel`` is `true`): the whole answer is `400`/`401` with ``responseBody``.
///
/// All texts are in this file so that the wire form has one source.
public struct FCMError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong; new codes can be added without breaking callers.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable, Hashable {
            case missingRegistration = "MissingRegistration"
            case invalidRegistration = "InvalidRegistration"
            case notRegistered = "NotRegistered"
            case invalidPackageName = "InvalidPackageName"
            case mismatchSenderId = "MismatchSenderId"
            case invalidParameters = "InvalidParameters"
            case messageTooBig = "MessageTooBig"
            case invalidDataKey = "InvalidDataKey"
            case invalidTtl = "InvalidTtl"
            case unavailable = "Unavailable"
            case internalServerError = "InternalServerError"
            case deviceMessageRateExceeded = "DeviceMessageRateExceeded"
            case topicsMessageRateExceeded = "TopicsMessageRateExceeded"
            case quotaExceeded = "QuotaExceeded"
            case invalidApnsCredential = "InvalidApnsCredential"
            case badRequest = "BadRequest"
            case authentication = "Authentication"
        }

        fileprivate let base: Base
        fileprivate init(_ base: Base) { self.base = base }

        /// No token: `to`/`registration_ids`/`registration_id` missing or empty.
        public static let missingRegistration = Code(.missingRegistration)
        /// The token is not of the registration-token format.
        public static let invalidRegistration = Code(.invalidRegistration)
        /// The token is well formed but not (or no longer) registered.
        public static let notRegistered = Code(.notRegistered)
        /// The token's app does not match `restricted_package_name`.
        public static let invalidPackageName = Code(.invalidPackageName)
        /// The token belongs to another project (sender id).
        public static let mismatchSenderId = Code(.mismatchSenderId)
        /// A parameter has a wrong value: a malformed topic name or condition, an unknown priority.
        public static let invalidParameters = Code(.invalidParameters)
        /// `data` + `notification` are larger than 4096 bytes (see ``FCMPayloadSize``).
        public static let messageTooBig = Code(.messageTooBig)
        /// A `data` key is reserved (`from`, `message_type`, `google…`, `gcm…`).
        public static let invalidDataKey = Code(.invalidDataKey)
        /// `time_to_live` is outside 0…2,419,200 seconds.
        public static let invalidTtl = Code(.invalidTtl)
        /// The store could not commit in time; the sender retries after `Retry-After`.
        public static let unavailable = Code(.unavailable)
        /// An unexpected failure inside the relay.
        public static let internalServerError = Code(.internalServerError)
        /// Too many messages for one device.
        public static let deviceMessageRateExceeded = Code(.deviceMessageRateExceeded)
        /// Too many messages for one topic.
        public static let topicsMessageRateExceeded = Code(.topicsMessageRateExceeded)
        /// Too many messages for the project (the relay's `project_message_rate`): the whole send is refused with
        /// `429` and `Retry-After` (FCM's legacy constant of the same name; HTTP v1's `QUOTA_EXCEEDED`).
        public static let quotaExceeded = Code(.quotaExceeded)
        /// APNs credential problem (never produced by PushRelay; listed for completeness).
        public static let invalidApnsCredential = Code(.invalidApnsCredential)
        /// The request is malformed (bad JSON, wrong field type): `400` with a plain-text reason.
        public static let badRequest = Code(.badRequest)
        /// The server key is missing or wrong: `401`.
        public static let authentication = Code(.authentication)

        /// The FCM code string, e.g. `MissingRegistration`.
        public var wireName: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public let code: Code
    /// Details: the `400` body of a bad request, the reason of `InvalidParameters`, or a note for logs.
    public let reason: String?

    /// An error with a code and optional reason.
    public init(code: Code, reason: String? = nil) {
        self.code = code
        self.reason = reason
    }

    public var description: String {
        if let reason { return "\(code.wireName): \(reason)" }
        return code.wireName
    }

    // MARK: Wire form

    /// Whether the error answers the whole request (`400`, `401`) instead of one result.
    public var isRequestLevel: Bool {
        switch code.base {
        case .badRequest, .authentication: true
        default: false
        }
    }

    /// The HTTP status of an answer made only of this error: `400`, `401`, `503` for ``Code/unavailable``,
    /// `500` for ``Code/internalServerError``, `400` for ``Code/invalidParameters`` and `200` for other result
    /// errors (they travel inside a `200` body).
    public var httpStatus: Int {
        switch code.base {
        case .badRequest, .invalidParameters: 400
        case .authentication: 401
        case .unavailable: 503
        case .quotaExceeded: 429
        case .internalServerError: 500
        default: 200
        }
    }

    /// The string of a result: `results[i].error`, the topic response's `error`, the plain-text `Error=…`.
    /// The FCM code, followed by `: <reason>` for ``Code/invalidParameters`` with a reason (as FCM answers
    /// `InvalidParameters: Bad topic or filter provided`).
    public var resultString: String {
        if code == .invalidParameters, let reason { return "InvalidParameters: \(reason)" }
        return code.wireName
    }

    /// The body of a request-level answer: the plain-text reason for `400`, FCM's HTML page for `401`.
    public var responseBody: String {
        switch code.base {
        case .authentication: return Self.unauthorizedHTML(title: reason ?? "Unauthorized")
        case .badRequest: return reason ?? "Bad Request"
        default: return resultString
        }
    }

    /// The `content-type` of ``responseBody``.
    public var responseContentType: String {
        code == .authentication ? "text/html; charset=UTF-8" : "text/plain; charset=UTF-8"
    }

    // MARK: Result errors

    /// `MissingRegistration`.
    public static let missingRegistration = FCMError(code: .missingRegistration)
    /// `InvalidRegistration`.
    public static let invalidRegistration = FCMError(code: .invalidRegistration)
    /// `NotRegistered`.
    public static let notRegistered = FCMError(code: .notRegistered)
    /// `InvalidPackageName`.
    public static let invalidPackageName = FCMError(code: .invalidPackageName)
    /// `MismatchSenderId`.
    public static let mismatchSenderId = FCMError(code: .mismatchSenderId)
    /// `MessageTooBig`.
    public static let messageTooBig = FCMError(code: .messageTooBig)
    /// `InvalidDataKey`.
    public static let invalidDataKey = FCMError(code: .invalidDataKey)
    /// `InvalidTtl`.
    public static let invalidTtl = FCMError(code: .invalidTtl)
    /// `Unavailable` (answer with `Retry-After`).
    public static let unavailable = FCMError(code: .unavailable)
    /// `InternalServerError`.
    public static let internalServerError = FCMError(code: .internalServerError)
    /// `DeviceMessageRateExceeded`.
    public static let deviceMessageRateExceeded = FCMError(code: .deviceMessageRateExceeded)
    /// `TopicsMessageRateExceeded`.
    public static let topicsMessageRateExceeded = FCMError(code: .topicsMessageRateExceeded)
    /// `QuotaExceeded` (`429` with `Retry-After`, the whole send).
    public static let quotaExceeded = FCMError(code: .quotaExceeded)

    /// `InvalidParameters: <reason>` (`400` when it ends the request, e.g. a malformed topic or condition).
    public static func invalidParameters(_ reason: String) -> FCMError {
        FCMError(code: .invalidParameters, reason: reason)
    }

    // MARK: Request errors (400, 401)

    /// `400` with a plain-text body.
    public static func badRequest(_ body: String) -> FCMError { FCMError(code: .badRequest, reason: body) }

    /// `400`, `JSON_PARSING_ERROR: Unexpected character (x) at position N.`
    public static func invalidJSON(_ error: JSONParseError) -> FCMError { badRequest(error.message) }

    /// `400`, `Field "<field>" must be a JSON <type>: <value as compact JSON>`, e.g. `Field "to" must be a JSON
    /// string: 5`. `type` is `string`, `number`, `boolean` or `array` (FCM calls objects arrays:
    /// `Field "data" must be a JSON array: …`).
    public static func fieldType(_ field: String, mustBe type: String, value: JSONValue) -> FCMError {
        badRequest("Field \"\(field)\" must be a JSON \(type): \(value.serializedString())")
    }

    /// `400`, `"registration_ids" field is not a JSON array`.
    public static let registrationIDsNotArray = badRequest("\"registration_ids\" field is not a JSON array")
    /// `400`, `"registration_ids" field cannot be empty`.
    public static let registrationIDsEmpty = badRequest("\"registration_ids\" field cannot be empty")

    /// `400`, `Number of messages on bulk (1001) exceeds maximum allowed (1000)`.
    public static func tooManyRegistrationIDs(_ count: Int, limit: Int = FCMLimits.maxRegistrationIDs) -> FCMError {
        badRequest("Number of messages on bulk (\(count)) exceeds maximum allowed (\(limit))")
    }

    /// `400`, `Must use either "registration_ids" field or "to", not both`.
    public static let toAndRegistrationIDs = badRequest("Must use either \"registration_ids\" field or \"to\", not both")
    /// `400`, `Must use either "condition" field or "to"/"registration_ids", not both`.
    public static let conditionAndTokens = badRequest(
        "Must use either \"condition\" field or \"to\"/\"registration_ids\", not both"
    )
    /// `400`, `Request body must be a JSON object`.
    public static let bodyNotObject = badRequest("Request body must be a JSON object")
    /// `400`, for a form body with more than one `registration_id`.
    public static let plainTextMulticast = badRequest(
        "Plain text requests accept one registration_id; use JSON with \"registration_ids\" for multicast"
    )
    /// `400`, for a form body that is not valid `application/x-www-form-urlencoded` UTF-8.
    public static let malformedForm = badRequest("Malformed application/x-www-form-urlencoded body")

    /// `401` without an `Authorization: key=` header. The HTML body carries FCM's status text.
    public static let missingAuthentication = FCMError(
        code: .authentication,
        reason: "The request was missing an Authentication Key (FCM Token). Please, refer to section "
            + "\"Authentication\" of the FCM documentation, at https://firebase.google.com/docs/cloud-messaging/server."
    )
    /// `401` with a key that matches no project.
    public static let invalidAuthentication = FCMError(code: .authentication, reason: nil)

    /// FCM's `401` page.
    static func unauthorizedHTML(title: String) -> String {
        """
        <HTML>
        <HEAD>
        <TITLE>\(title)</TITLE>
        </HEAD>
        <BODY BGCOLOR="#FFFFFF" TEXT="#000000">
        <H1>\(title)</H1>
        <H2>Error 401</H2>
        </BODY>
        </HTML>

        """
    }
}
