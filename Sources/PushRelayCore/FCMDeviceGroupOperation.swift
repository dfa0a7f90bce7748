public import PushRelayWire

/// A parsed and validated request of FCM's device-group API, `POST /fcm/notification`: create a group of a
/// project's devices under a name, or add members to it or remove members from it by its `notification_key`.
///
///     {"operation": "create", "notification_key_name": "appUser-Chris", "registration_ids": ["<token>", …]}
///     {"operation": "add", "notification_key_name": "appUser-Chris", "notification_key": "APA91b…",
///      "registration_ids": ["<token>"]}
///
/// Parsing checks what the request alone can show (``FCMDeviceGroupError``, `400`): the operation, a
/// `notification_key_name` for `create` (a string of 1…256 bytes; optional for `add` and `remove`, where it must then
/// name the group), a `notification_key` for `add` and `remove`, and `registration_ids`: a non-empty array of
/// registration tokens, at most ``FCMLimits/maxDeviceGroupMembers`` once repeats are removed. What only the store
/// knows (an unknown key, a taken name, a token not registered or of another project, the members the group holds
/// already) is the store's to answer. Unknown fields are ignored and a `null` field counts as absent, as in a send.
public struct FCMDeviceGroupOperation: Sendable, Hashable {
    /// `operation`.
    public enum Kind: String, Sendable, Hashable {
        /// A new group named `notification_key_name` with these members.
        case create
        /// These members join the group.
        case add
        /// These members leave the group; a group left without members is deleted.
        case remove
    }

    /// `operation`.
    public var kind: Kind
    /// `notification_key_name`: set for `create`; for `add` and `remove` when the sender gave it.
    public var name: String?
    /// `notification_key`: set for `add` and `remove`, nil for `create`. A text of another shape is no group's key, and
    /// is answered `notification_key not found` (``FCMDeviceGroupError/notFound``) before any look-up.
    public var notificationKey: NotificationKey?
    /// `registration_ids`: registration tokens, each once, in request order.
    public var registrationIDs: [String]

    /// A value (not validated; for tests and tools).
    public init(kind: Kind, name: String?, notificationKey: NotificationKey?, registrationIDs: [String]) {
        self.kind = kind
        self.name = name
        self.notificationKey = notificationKey
        self.registrationIDs = registrationIDs
    }

    /// Parses and validates a JSON body; throws the `400` the request gets for what is wrong with it.
    public static func parse(json bytes: [UInt8], limits: JSONParseLimits = .default) throws(FCMDeviceGroupError)
        -> FCMDeviceGroupOperation
    {
        let root: JSONValue
        do {
            root = try JSONValue.parse(bytes, limits: limits)
        } catch {
            throw .badRequest(error.message)
        }
        guard case .object(let object) = root else { throw .badRequest("Request body must be a JSON object") }
        func field(_ name: String) -> JSONValue? {
            guard let value = object[name], !value.isNull else { return nil }
            return value
        }
        guard let operation = field("operation") else { throw .badRequest("operation is required") }
        guard let text = operation.stringValue, let kind = Kind(rawValue: text) else {
            throw .badRequest(#"invalid operation: must be "create", "add" or "remove""#)
        }

        var name: String?
        if let value = field("notification_key_name") {
            guard let text = value.stringValue, !text.isEmpty,
                text.utf8.count <= FCMLimits.maxNotificationKeyNameLength
            else {
                throw .badRequest(
                    "notification_key_name must be a non-empty string of at most "
                        + "\(FCMLimits.maxNotificationKeyNameLength) bytes")
            }
            name = text
        }
        if kind == .create, name == nil { throw .badRequest("notification_key_name is required") }

        var key: NotificationKey?
        if kind != .create {
            guard let value = field("notification_key") else { throw .badRequest("notification_key is required") }
            guard let text = value.stringValue else { throw .badRequest("notification_key must be a string") }
            guard let parsed = NotificationKey(text) else { throw .notFound }
            key = parsed
        }

        guard let value = field("registration_ids") else { throw .badRequest("registration_ids is required") }
        guard case .array(let elements) = value else {
            throw .badRequest(#""registration_ids" field is not a JSON array"#)
        }
        guard !elements.isEmpty else { throw .badRequest(#""registration_ids" field cannot be empty"#) }
        var tokens: [String] = []
        var seen = Set<String>()
        var malformed: Int?
        for (index, element) in elements.enumerated() {
            guard let token = element.stringValue, RegistrationToken.isWellFormed(token) else {
                if malformed == nil { malformed = index }
                continue
            }
            if seen.insert(token).inserted { tokens.append(token) }
        }
        if tokens.isEmpty { throw .noValidRegistrationIDs }
        if let malformed { throw .invalidRegistration(index: malformed) }
        guard tokens.count <= FCMLimits.maxDeviceGroupMembers else { throw .tooManyMembers }
        return FCMDeviceGroupOperation(kind: kind, name: name, notificationKey: key, registrationIDs: tokens)
    }
}
