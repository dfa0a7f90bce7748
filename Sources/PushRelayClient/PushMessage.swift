public import PushRelayWire

/// One message as the device receives it: the envelope and what is read from it.
///
/// The envelope is what FCM hands an iOS app as `userInfo`: a flat object with `gcm.message_id`,
/// `google.c.sender.id`, `aps.alert.title`/`body`, the notification's custom keys as `gcm.notification.<key>`
/// (objects as JSON text) and the message's `data` keys at the top level.
///
/// ```swift
/// let sales = try message.salesNotification()            // gcm.notification.orderInfo
/// let other = try message.decode(Coupon.self, forNotificationKey: "coupon")
/// ```
public struct PushMessage: Sendable, Hashable {
    /// The prefix of notification keys in the envelope: `gcm.notification.`.
    public static let notificationPrefix = EnvelopeKey.notificationPrefix

    /// The message id: the stream event's id, equal to the envelope's `gcm.message_id` and to the `message_id` the
    /// sender got back from `/fcm/send`.
    public let id: String
    /// The envelope, as received.
    public let envelope: [String: JSON]

    /// Creates a message from its id and envelope.
    public init(id: String, envelope: [String: JSON]) {
        self.id = id
        self.envelope = envelope
    }

    /// The envelope under the name iOS gives it.
    public var userInfo: [String: JSON] { envelope }

    /// The project's sender id, `google.c.sender.id`.
    public var senderID: String? { envelope[EnvelopeKey.senderID].flatMap(Self.text) }

    /// The notification title, `aps.alert.title`.
    public var title: String? { envelope[EnvelopeKey.aps]?["alert"]?["title"]?.stringValue }

    /// The notification body, `aps.alert.body` (or `aps.alert` when the alert is a plain string).
    public var body: String? {
        guard let alert = envelope[EnvelopeKey.aps]?["alert"] else { return nil }
        return alert.stringValue ?? alert["body"]?.stringValue
    }

    /// The collapse key, `collapse_key`, when the sender gave one.
    public var collapseKey: String? { envelope[EnvelopeKey.collapseKey]?.stringValue }

    /// The topic the message was sent to, `from`, when it was sent to a topic.
    public var from: String? { envelope[EnvelopeKey.from]?.stringValue }

    /// The sender's `data` keys: every top-level key that is not reserved (`aps`, `from`, `collapse_key`, and keys
    /// starting with `gcm.` or `google.`).
    public var data: [String: JSON] {
        envelope.filter { key, _ in
            !(key == EnvelopeKey.aps || key == EnvelopeKey.from || key == EnvelopeKey.collapseKey
                || key.hasPrefix("gcm.") || key.hasPrefix("google."))
        }
    }

    /// The notification's custom keys, without the `gcm.notification.` prefix.
    public var notificationValues: [String: JSON] {
        var values: [String: JSON] = [:]
        for (key, value) in envelope where key.hasPrefix(Self.notificationPrefix) {
            values[String(key.dropFirst(Self.notificationPrefix.count))] = value
        }
        return values
    }

    /// The raw value of `gcm.notification.<key>`.
    public func notificationValue(forKey key: String) -> JSON? {
        envelope[Self.notificationPrefix + key]
    }

    /// Decodes `gcm.notification.<key>`, given as JSON text (the usual form) or as a nested object.
    ///
    /// - Throws: ``NotificationDecodingError`` naming the missing or malformed field.
    public func decode<Value: Decodable>(_ type: Value.Type, forNotificationKey key: String) throws -> Value {
        try decode(type, envelopeKey: Self.notificationPrefix + key, notificationKey: key)
    }

    /// Decodes the value under any envelope key: `gcm.notification.<key>` (the prefix may be left out when no `data`
    /// key of that name exists) or a `data` key; JSON text or a nested value.
    ///
    /// - Throws: ``NotificationDecodingError`` naming the missing or malformed field.
    public func decode<Value: Decodable>(_ type: Value.Type, forKey key: String) throws -> Value {
        if key.hasPrefix(Self.notificationPrefix) {
            return try decode(type, forNotificationKey: String(key.dropFirst(Self.notificationPrefix.count)))
        }
        if envelope[key] == nil, envelope[Self.notificationPrefix + key] != nil {
            return try decode(type, forNotificationKey: key)
        }
        return try decode(type, envelopeKey: key, notificationKey: key)
    }

    private func decode<Value: Decodable>(_ type: Value.Type, envelopeKey: String, notificationKey key: String)
        throws -> Value
    {
        guard let raw = envelope[envelopeKey] else {
            throw NotificationDecodingError(code: .missingNotification, notificationKey: key, field: envelopeKey,
                                            message: "the message has no \(envelopeKey)")
        }
        let value: JSON
        if case .string(let text) = raw {
            do {
                value = try JSON.parse(text)
            } catch {
                throw NotificationDecodingError(code: .notJSON, notificationKey: key, field: envelopeKey,
                                                message: "\(envelopeKey) is not JSON text")
            }
        } else {
            value = raw
        }
        do {
            return try value.decode(Value.self)
        } catch let error as DecodingError {
            throw NotificationDecodingError(error, notificationKey: key)
        }
    }

    /// Decodes the shop scenario's ``SalesNotification`` from `gcm.notification.orderInfo`, or, in a message without
    /// it, from the top-level key `orderInfo`: FCM HTTP v1 has no custom notification keys, so v1 senders put the
    /// order in `data` (as JSON text) or in `apns.payload`, and the device receives it at the top level.
    ///
    /// - Throws: ``NotificationDecodingError`` naming the missing or malformed field.
    public func salesNotification() throws -> SalesNotification {
        let key = SalesNotification.notificationKey
        if envelope[Self.notificationPrefix + key] == nil, envelope[key] != nil {
            return try decode(SalesNotification.self, forKey: key)
        }
        return try decode(SalesNotification.self, forNotificationKey: key)
    }

    /// A string as is, a number as its digits.
    private static func text(_ value: JSON) -> String? {
        switch value {
        case .string(let text): text
        case .number(let number) where number.isIntegerText: number.text
        default: nil
        }
    }
}
