import PushRelayWire

/// An error of the FCM HTTP v1 API and its one mapping to the wire: a `google.rpc.Status` in JSON,
///
///     {"error": {"code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND",
///       "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}]}}
///
/// with the HTTP status in `code`. FCM errors carry an `FcmError` detail with their ``errorCode``; request-format
/// errors add a `google.rpc.BadRequest` detail naming the field; authentication errors carry neither.
public struct FCMv1Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status (also `error.code`).
    public var httpStatus: Int
    /// The canonical status name (`INVALID_ARGUMENT`, `NOT_FOUND`, …).
    public var status: String
    /// The human-readable `error.message`.
    public var message: String
    /// The `FcmError.errorCode` (`UNREGISTERED`, `SENDER_ID_MISMATCH`, …), or nil for errors without one.
    public var errorCode: String?
    /// `google.rpc.BadRequest.fieldViolations`: the field path and what is wrong with it.
    public var fieldViolations: [(field: String, description: String)]
    /// `Retry-After` seconds for `UNAVAILABLE` and `QUOTA_EXCEEDED`.
    public var retryAfterSeconds: Int?
    /// The legacy error of a token's outcome this error stands for (`InvalidRegistration` for a malformed
    /// `message.token`), so that metrics count one outcome under one name on both APIs; nil for the others. Not on
    /// the wire.
    public var legacyOutcome: String?

    /// The name under which metrics count this error: ``legacyOutcome``, else ``errorCode``, else ``status``.
    public var metricName: String { legacyOutcome ?? errorCode ?? status }

    /// `400 INVALID_ARGUMENT` for a `message.token` that is not of the token format (legacy `InvalidRegistration`).
    public static var invalidRegistrationToken: FCMv1Error {
        var error = FCMv1Error.invalidArgument("The registration token is not a valid FCM registration token", field: "message.token")
        error.legacyOutcome = FCMError.Code.invalidRegistration.wireName
        return error
    }

    /// An error.
    public init(
        httpStatus: Int, status: String, message: String, errorCode: String? = nil,
        fieldViolations: [(field: String, description: String)] = [], retryAfterSeconds: Int? = nil
    ) {
        self.httpStatus = httpStatus
        self.status = status
        self.message = message
        self.errorCode = errorCode
        self.fieldViolations = fieldViolations
        self.retryAfterSeconds = retryAfterSeconds
    }

    public var description: String { "\(errorCode ?? status): \(message)" }

    public static func == (lhs: FCMv1Error, rhs: FCMv1Error) -> Bool {
        lhs.httpStatus == rhs.httpStatus && lhs.status == rhs.status && lhs.message == rhs.message
            && lhs.errorCode == rhs.errorCode && lhs.fieldViolations.map(\.field) == rhs.fieldViolations.map(\.field)
            && lhs.fieldViolations.map(\.description) == rhs.fieldViolations.map(\.description)
            && lhs.retryAfterSeconds == rhs.retryAfterSeconds
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(httpStatus)
        hasher.combine(message)
        hasher.combine(errorCode)
    }

    /// The JSON body.
    public var body: [UInt8] {
        var details: [JSONValue] = []
        if let errorCode {
            details.append([
                "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(errorCode),
            ])
        }
        if !fieldViolations.isEmpty {
            details.append([
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": .array(fieldViolations.map {
                    ["field": .string($0.field), "description": .string($0.description)]
                }),
            ])
        }
        var error: JSONValue = [
            "code": .integer(Int64(httpStatus)), "message": .string(message), "status": .string(status),
        ]
        if !details.isEmpty, case .object(var object) = error {
            object["details"] = .array(details)
            error = .object(object)
        }
        let root: JSONValue = ["error": error]
        return root.serialized()
    }

    // MARK: The errors

    /// `400 INVALID_ARGUMENT`, errorCode `INVALID_ARGUMENT`, with a field violation when `field` is given.
    public static func invalidArgument(_ message: String, field: String? = nil) -> FCMv1Error {
        FCMv1Error(
            httpStatus: 400, status: "INVALID_ARGUMENT", message: message, errorCode: "INVALID_ARGUMENT",
            fieldViolations: field.map { [($0, message)] } ?? [])
    }

    /// A body that is not JSON or has an unknown or mistyped field: `400 INVALID_ARGUMENT` with only a
    /// `BadRequest` detail, as Google's JSON decoding answers before FCM sees the message.
    public static func invalidPayload(_ message: String, field: String) -> FCMv1Error {
        FCMv1Error(httpStatus: 400, status: "INVALID_ARGUMENT", message: message, fieldViolations: [(field, message)])
    }

    /// `404 NOT_FOUND`, errorCode `UNREGISTERED`: the token is not (or no longer) registered.
    public static let unregistered = FCMv1Error(
        httpStatus: 404, status: "NOT_FOUND", message: "Requested entity was not found.", errorCode: "UNREGISTERED")

    /// `403 PERMISSION_DENIED`, errorCode `SENDER_ID_MISMATCH`: the token belongs to another project.
    public static let senderIDMismatch = FCMv1Error(
        httpStatus: 403, status: "PERMISSION_DENIED", message: "SenderId mismatch", errorCode: "SENDER_ID_MISMATCH")

    /// `429 RESOURCE_EXHAUSTED`, errorCode `QUOTA_EXCEEDED`.
    public static func quotaExceeded(_ message: String, retryAfterSeconds: Int? = nil) -> FCMv1Error {
        FCMv1Error(
            httpStatus: 429, status: "RESOURCE_EXHAUSTED", message: message, errorCode: "QUOTA_EXCEEDED",
            retryAfterSeconds: retryAfterSeconds)
    }

    /// `503 UNAVAILABLE`, errorCode `UNAVAILABLE`, with `Retry-After`.
    public static func unavailable(retryAfterSeconds: Int) -> FCMv1Error {
        FCMv1Error(
            httpStatus: 503, status: "UNAVAILABLE", message: "The service is currently unavailable.",
            errorCode: "UNAVAILABLE", retryAfterSeconds: retryAfterSeconds)
    }

    /// `500 INTERNAL`, errorCode `INTERNAL`.
    public static let internalError = FCMv1Error(
        httpStatus: 500, status: "INTERNAL", message: "Internal error encountered.", errorCode: "INTERNAL")

    /// `401 UNAUTHENTICATED`, errorCode `THIRD_PARTY_AUTH_ERROR`: the APNs or web-push credential was refused
    /// (PushRelay delivers itself and never produces it; kept for the mapping of `InvalidApnsCredential`).
    public static let thirdPartyAuthError = FCMv1Error(
        httpStatus: 401, status: "UNAUTHENTICATED", message: "Auth error from APNS or Web Push Service",
        errorCode: "THIRD_PARTY_AUTH_ERROR")

    /// `401 UNAUTHENTICATED` without an FcmError: no, an expired, an unknown or a revoked bearer token.
    public static let unauthenticated = FCMv1Error(
        httpStatus: 401, status: "UNAUTHENTICATED",
        message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or "
            + "other valid authentication credential. See "
            + "https://developers.google.com/identity/sign-in/web/devconsole-project.")

    /// `403 PERMISSION_DENIED` without an FcmError: the token's service account does not own `project`.
    public static func permissionDenied(project: String) -> FCMv1Error {
        FCMv1Error(
            httpStatus: 403, status: "PERMISSION_DENIED",
            message: "Permission 'cloudmessaging.messages.create' denied on resource "
                + "'//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist).")
    }

    /// `501 UNIMPLEMENTED`: a route under `/v1/projects/` that PushRelay does not serve. Deliberately not a 404, which
    /// v1 libraries read as "token not registered" and then delete the token.
    public static func unimplemented(method: String, path: String) -> FCMv1Error {
        FCMv1Error(
            httpStatus: 501, status: "UNIMPLEMENTED",
            message: "Method not found: \(method) \(path) is not an FCM HTTP v1 method this relay serves.")
    }

    /// The v1 error for a legacy result error of the shared send path (admin-node's mapping: `NotRegistered` →
    /// `UNREGISTERED`, `MismatchSenderId` → `SENDER_ID_MISMATCH`, the rate errors → `QUOTA_EXCEEDED`,
    /// `InvalidApnsCredential` → `THIRD_PARTY_AUTH_ERROR`, `Unavailable`, `InternalServerError`, the `Invalid*` and
    /// `MessageTooBig` → `INVALID_ARGUMENT`).
    public static func from(_ error: FCMError, retryAfterSeconds: Int) -> FCMv1Error {
        switch error.code {
        case .notRegistered: return .unregistered
        case .mismatchSenderId: return .senderIDMismatch
        case .deviceMessageRateExceeded:
            return .quotaExceeded("Too many messages for this device.", retryAfterSeconds: retryAfterSeconds)
        case .topicsMessageRateExceeded:
            return .quotaExceeded("Too many messages for this topic.", retryAfterSeconds: retryAfterSeconds)
        case .quotaExceeded:
            return .quotaExceeded("Too many messages for this project.", retryAfterSeconds: retryAfterSeconds)
        case .invalidApnsCredential: return .thirdPartyAuthError
        case .unavailable: return .unavailable(retryAfterSeconds: retryAfterSeconds)
        case .internalServerError: return .internalError
        case .missingRegistration, .invalidRegistration:
            return .invalidRegistrationToken
        case .invalidPackageName:
            return .invalidArgument(
                "The registration token's app does not match restricted_package_name",
                field: "message.android.restricted_package_name")
        case .invalidDataKey:
            return .invalidArgument("Invalid data payload key: keys 'from', 'message_type', 'google…' and 'gcm…' are reserved", field: "message.data")
        case .invalidTtl:
            return .invalidArgument("The time to live is outside 0 to 2419200 seconds (4 weeks)", field: "message.android.ttl")
        case .messageTooBig:
            return .invalidArgument("Message is too big: the payload is limited to \(FCMLimits.maxPayloadBytes) bytes", field: "message")
        default:
            return .invalidArgument(error.reason ?? error.code.wireName)
        }
    }
}
