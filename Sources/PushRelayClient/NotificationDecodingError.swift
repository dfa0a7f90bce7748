/// Why a notification value of a ``PushMessage`` could not be decoded; names the field at fault.
///
/// ``PushMessage/decode(_:forNotificationKey:)`` never crashes and never returns a silently empty value: a missing
/// or malformed field gives this error, with ``field`` naming it (`"orderID"`, `"userEmail"`, or the envelope key
/// `"gcm.notification.orderInfo"` when the notification itself is missing or not JSON).
public struct NotificationDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure. New kinds may be added; switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case missingNotification, notJSON, missingField, invalidField
        }

        private let base: Base

        private init(_ base: Base) { self.base = base }

        /// The envelope has no `gcm.notification.<key>`.
        public static let missingNotification = Code(.missingNotification)
        /// `gcm.notification.<key>` is a string that is not JSON text.
        public static let notJSON = Code(.notJSON)
        /// A required field is absent or `null`.
        public static let missingField = Code(.missingField)
        /// A field has the wrong type or an unusable value.
        public static let invalidField = Code(.invalidField)

        /// The code's name, e.g. `missingField`.
        public var description: String { base.rawValue }
    }

    /// The kind of failure.
    public let code: Code
    /// The notification key that was decoded, e.g. `orderInfo`.
    public let notificationKey: String
    /// The field at fault: a dotted path inside the notification (`orderID`), or the envelope key
    /// (`gcm.notification.orderInfo`) for ``Code/missingNotification`` and ``Code/notJSON``.
    public let field: String
    /// A sentence for people.
    public let message: String

    /// Creates an error.
    public init(code: Code, notificationKey: String, field: String, message: String) {
        self.code = code
        self.notificationKey = notificationKey
        self.field = field
        self.message = message
    }

    /// `<code> '<field>': <message>`.
    public var description: String { "\(code) '\(field)': \(message)" }
}

extension NotificationDecodingError {
    /// Maps a `DecodingError` raised inside the notification to the field it names.
    init(_ error: DecodingError, notificationKey: String) {
        let envelopeKey = PushMessage.notificationPrefix + notificationKey
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            let keys = (codingPath + (last.map { [$0] } ?? [])).map(\.stringValue)
            return keys.isEmpty ? envelopeKey : keys.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = path(context.codingPath, key)
            self.init(code: .missingField, notificationKey: notificationKey, field: field,
                      message: "\(envelopeKey) has no field '\(field)'")
        case .valueNotFound(_, let context):
            let field = path(context.codingPath)
            self.init(code: .missingField, notificationKey: notificationKey, field: field,
                      message: "field '\(field)' of \(envelopeKey) is null")
        case .typeMismatch(let type, let context):
            let field = path(context.codingPath)
            self.init(code: .invalidField, notificationKey: notificationKey, field: field,
                      message: "field '\(field)' of \(envelopeKey) is not of type \(type)")
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            self.init(code: .invalidField, notificationKey: notificationKey, field: field,
                      message: "field '\(field)' of \(envelopeKey): \(context.debugDescription)")
        @unknown default:
            self.init(code: .invalidField, notificationKey: notificationKey, field: envelopeKey,
                      message: "\(envelopeKey) could not be decoded: \(error)")
        }
    }
}
