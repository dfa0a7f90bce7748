public import PushRelayWire

/// A validated FCM HTTP v1 send request (`POST /v1/projects/{project_id}/messages:send`): the `Message` and
/// `validate_only`.
///
/// ``parse(json:)`` refuses what Google refuses, with Google's `400 INVALID_ARGUMENT` texts: a body that is not
/// JSON, an unknown field anywhere in the message (`Unknown name "x" at 'message.android': Cannot find field.`), a
/// value of the wrong type (`Invalid value at 'message.data[0].value' (TYPE_STRING), 3`: data values are strings),
/// no target or more than one of `token`, `topic`, `condition`, a malformed topic, condition or duration.
/// ``legacyRequest(nowSeconds:)`` maps the message onto the legacy request that the shared send path and the
/// device envelope understand (the table is in docs/protocol.md).
public struct FCMv1Message: Sendable, Hashable {
    /// Where the message goes.
    public enum Target: Sendable, Hashable {
        /// `token`: a registration token, or a device group's notification key (``NotificationKey``).
        case token(String)
        /// `topic` (without `/topics/`).
        case topic(TopicName)
        /// `condition`.
        case condition(TopicCondition)
    }

    /// The target.
    public var target: Target
    /// `validate_only`: check and answer, deliver nothing.
    public var validateOnly: Bool
    /// `message.data` (string values).
    public var data: JSONObject?
    /// `message.notification` (`title`, `body`, `image`).
    public var notification: JSONObject?
    /// `message.android`, field names in snake_case.
    public var android: JSONObject?
    /// `message.apns` (`headers`, `payload`, `fcm_options`).
    public var apns: JSONObject?
    /// `message.webpush` (`headers`, `data`, `notification`, `fcm_options`).
    public var webpush: JSONObject?
    /// `message.fcm_options.analytics_label`.
    public var analyticsLabel: String?

    /// Parses and validates a request body.
    public static func parse(json bytes: [UInt8], limits: JSONParseLimits = .v1) throws(FCMv1Error) -> FCMv1Message {
        let root: JSONValue
        do {
            root = try JSONValue.parse(bytes, limits: limits)
        } catch {
            throw FCMv1Error.invalidPayload("Invalid JSON payload received. \(error.message)", field: "")
        }
        guard case .object(let request) = try FCMv1Schema.request.check(root, at: { "" }) else {
            throw FCMv1Error.invalidPayload("Invalid JSON payload received. The body must be an object.", field: "")
        }
        guard let message = request["message"]?.objectValue else {
            throw FCMv1Error.invalidArgument("Request contains an invalid argument: message is required", field: "message")
        }
        return try parse(message: message, validateOnly: request["validate_only"]?.boolValue ?? false)
    }

    /// Validates a schema-checked `message` object (snake_case names).
    static func parse(message: JSONObject, validateOnly: Bool) throws(FCMv1Error) -> FCMv1Message {
        var target: Target?
        var targetField: String?
        for field in ["token", "topic", "condition"] {
            guard let text = message[field]?.stringValue else { continue }
            if targetField != nil {
                throw FCMv1Error.invalidPayload(
                    "Invalid value at 'message' (oneof), oneof field 'target' is already set. Cannot set '\(field)'",
                    field: "message")
            }
            targetField = field
            switch field {
            case "token":
                // A device group's notification key goes in `token` too, as FCM HTTP v1 addresses groups.
                guard RegistrationToken.isWellFormed(text) || NotificationKey.isWellFormed(text) else {
                    throw FCMv1Error.invalidRegistrationToken
                }
                target = .token(text)
            case "topic":
                let name = text.hasPrefix(TopicName.prefix) ? String(text.dropFirst(TopicName.prefix.count)) : text
                guard let topic = TopicName(TopicName.prefix + name) else {
                    throw FCMv1Error.invalidArgument(
                        "Invalid topic name: a topic matches [a-zA-Z0-9-_.~%]{1,900}", field: "message.topic")
                }
                target = .topic(topic)
            default:
                do {
                    target = .condition(try TopicCondition.parse(text))
                } catch {
                    throw FCMv1Error.invalidArgument("Invalid condition expression: \(error.reason)", field: "message.condition")
                }
            }
        }
        guard let target else {
            throw FCMv1Error.invalidArgument(
                "Recipient of the message is not set: one of token, topic or condition is required", field: "message")
        }
        return FCMv1Message(
            target: target, validateOnly: validateOnly, data: message["data"]?.objectValue,
            notification: message["notification"]?.objectValue, android: message["android"]?.objectValue,
            apns: message["apns"]?.objectValue, webpush: message["webpush"]?.objectValue,
            analyticsLabel: message["fcm_options"]?["analytics_label"]?.stringValue)
    }
}
