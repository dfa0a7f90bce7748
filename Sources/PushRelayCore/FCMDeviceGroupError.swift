import PushRelayWire

/// An error of FCM's device-group API (`POST` and `GET /fcm/notification`) and its one mapping to the wire:
/// `{"error": "<message>"}`, `400` for what the request got wrong and `401` for its credentials, as FCM answers
/// them (`{"error":"notification_key already exists"}`). The messages FCM is known to send are used as they are;
/// the others say what was wrong in the same style. All texts are in this file.
public struct FCMDeviceGroupError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong; new codes can be added without breaking callers.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable, Hashable {
            case badRequest, nameExists, notFound, nameMismatch, invalidRegistration, notRegistered, mismatchSenderId
            case tooManyMembers, invalidProjectID, unauthenticated
        }

        fileprivate let base: Base
        fileprivate init(_ base: Base) { self.base = base }

        /// The body is not a well-formed request (bad JSON, a missing or mistyped field, an unknown operation).
        public static let badRequest = Code(.badRequest)
        /// `create` with a `notification_key_name` that names a group of the project already.
        public static let nameExists = Code(.nameExists)
        /// No group of the project has this `notification_key` (or, for a look-up, this name).
        public static let notFound = Code(.notFound)
        /// `add`/`remove` with a `notification_key_name` that is not the group's.
        public static let nameMismatch = Code(.nameMismatch)
        /// A `registration_ids` element is not of the registration-token format.
        public static let invalidRegistration = Code(.invalidRegistration)
        /// A `registration_ids` token is not (or no longer) registered.
        public static let notRegistered = Code(.notRegistered)
        /// A `registration_ids` token belongs to another project.
        public static let mismatchSenderId = Code(.mismatchSenderId)
        /// The group would have more than ``FCMLimits/maxDeviceGroupMembers`` members.
        public static let tooManyMembers = Code(.tooManyMembers)
        /// The `project_id` header is missing or is not the sender id of the credentials' project.
        public static let invalidProjectID = Code(.invalidProjectID)
        /// No valid server key or access token: `401`.
        public static let unauthenticated = Code(.unauthenticated)

        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public let code: Code
    /// The `error` text of the answer.
    public let message: String

    /// An error with a code and its wire message.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    /// `401` for ``Code/unauthenticated``, else `400`.
    public var httpStatus: Int { code == .unauthenticated ? 401 : 400 }

    /// `{"error":"<message>"}`.
    public func jsonBody() -> [UInt8] {
        var buffer: [UInt8] = []
        JSONWriter.appendRaw("{\"error\":", to: &buffer)
        JSONWriter.appendString(message, to: &buffer)
        buffer.append(UInt8(ascii: "}"))
        return buffer
    }

    // MARK: The errors

    /// `400` with a free-form reason (FCM's `/fcm/send` texts where they fit: `JSON_PARSING_ERROR: …`).
    public static func badRequest(_ message: String) -> FCMDeviceGroupError {
        FCMDeviceGroupError(code: .badRequest, message: message)
    }

    /// FCM's `notification_key already exists`.
    public static let nameExists = FCMDeviceGroupError(code: .nameExists, message: "notification_key already exists")
    /// FCM's `notification_key not found`.
    public static let notFound = FCMDeviceGroupError(code: .notFound, message: "notification_key not found")
    /// `notification_key_name does not match notification_key`.
    public static let nameMismatch = FCMDeviceGroupError(
        code: .nameMismatch, message: "notification_key_name does not match notification_key")
    /// FCM's `no valid registration ids`: not one element of `registration_ids` is a registration token.
    public static let noValidRegistrationIDs = FCMDeviceGroupError(
        code: .invalidRegistration, message: "no valid registration ids")
    /// `registration_ids[<index>] is not a registration token (InvalidRegistration)`.
    public static func invalidRegistration(index: Int) -> FCMDeviceGroupError {
        FCMDeviceGroupError(
            code: .invalidRegistration,
            message: "registration_ids[\(index)] is not a registration token (InvalidRegistration)")
    }
    /// `registration id not registered (NotRegistered): <token>`.
    public static func notRegistered(_ token: String) -> FCMDeviceGroupError {
        FCMDeviceGroupError(code: .notRegistered, message: "registration id not registered (NotRegistered): \(token)")
    }
    /// `registration id of another project (MismatchSenderId): <token>`.
    public static func mismatchSenderId(_ token: String) -> FCMDeviceGroupError {
        FCMDeviceGroupError(
            code: .mismatchSenderId, message: "registration id of another project (MismatchSenderId): \(token)")
    }
    /// `too many registration ids: a device group has at most 20 members`.
    public static let tooManyMembers = FCMDeviceGroupError(
        code: .tooManyMembers,
        message: "too many registration ids: a device group has at most \(FCMLimits.maxDeviceGroupMembers) members")
    /// FCM's `INVALID_PROJECT_ID`: the `project_id` header is missing or not the project's sender id.
    public static let invalidProjectID = FCMDeviceGroupError(code: .invalidProjectID, message: "INVALID_PROJECT_ID")
    /// `401`, `UNAUTHENTICATED` (the Instance ID API's word for the same failure).
    public static let unauthenticated = FCMDeviceGroupError(code: .unauthenticated, message: "UNAUTHENTICATED")
}
