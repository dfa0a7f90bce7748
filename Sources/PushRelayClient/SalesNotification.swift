/// The shop scenario's notification: an order changed state.
///
/// The back end sends it as `notification.orderInfo`; the device receives it as `gcm.notification.orderInfo`,
/// usually as JSON text. Decode it with ``PushMessage/salesNotification()``.
///
/// Decoding accepts what real senders produce:
/// - the id spelled `orderID` (as senders write it) or `orderId` (as the course's device log shows it);
/// - the id as a JSON number (`3`) or a numeric string (`"3"`).
///
/// Anything else (a missing field, `null`, a wrong type, a non-numeric id, both spellings with different values)
/// throws a `DecodingError` whose coding path names the field; ``PushMessage/decode(_:forNotificationKey:)`` turns it
/// into a ``NotificationDecodingError``. Encoding writes `orderID` as a number.
public struct SalesNotification: Codable, Sendable, Hashable {
    /// The notification key under which senders put this value: `orderInfo`.
    public static let notificationKey = "orderInfo"

    /// The order's new status, e.g. `Novo pedido`.
    public var newOrderStatus: String
    /// The customer's email address, e.g. `matilde@siecola.com.br`.
    public var userEmail: String
    /// The order number, e.g. `3`.
    public var orderID: Int
    /// Why the notification was sent, e.g. `Status de pedido`.
    public var infoReason: String

    /// Creates a notification.
    public init(newOrderStatus: String, userEmail: String, orderID: Int, infoReason: String) {
        self.newOrderStatus = newOrderStatus
        self.userEmail = userEmail
        self.orderID = orderID
        self.infoReason = infoReason
    }

    private enum CodingKeys: String, CodingKey {
        case newOrderStatus, userEmail, orderID, orderId, infoReason
    }

    /// Decodes the notification, accepting `orderID`/`orderId` and a number or numeric string for the id.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        newOrderStatus = try container.decode(String.self, forKey: .newOrderStatus)
        userEmail = try container.decode(String.self, forKey: .userEmail)
        infoReason = try container.decode(String.self, forKey: .infoReason)
        let upper = try Self.orderID(in: container, forKey: .orderID)
        let lower = try Self.orderID(in: container, forKey: .orderId)
        switch (upper, lower) {
        case (let upper?, let lower?) where upper != lower:
            throw DecodingError.dataCorruptedError(
                forKey: .orderID, in: container,
                debugDescription: "orderID (\(upper)) and orderId (\(lower)) disagree")
        case (let id?, _), (nil, let id?):
            orderID = id
        case (nil, nil):
            throw DecodingError.keyNotFound(
                CodingKeys.orderID,
                DecodingError.Context(codingPath: container.codingPath,
                                      debugDescription: "neither orderID nor orderId is present"))
        }
    }

    /// The id under `key`: `nil` when absent, an `Int` from a number or a numeric string, else an error.
    private static func orderID(in container: KeyedDecodingContainer<CodingKeys>, forKey key: CodingKeys) throws
        -> Int?
    {
        guard container.contains(key) else { return nil }
        if try container.decodeNil(forKey: key) {
            throw DecodingError.valueNotFound(
                Int.self, DecodingError.Context(codingPath: container.codingPath + [key],
                                                debugDescription: "\(key.stringValue) is null"))
        }
        if let number = try? container.decode(Int.self, forKey: key) {
            return number
        }
        if let text = try? container.decode(String.self, forKey: key) {
            guard let number = Int(text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: container, debugDescription: "'\(text)' is not an integer")
            }
            return number
        }
        throw DecodingError.typeMismatch(
            Int.self, DecodingError.Context(codingPath: container.codingPath + [key],
                                            debugDescription: "expected an integer or a numeric string"))
    }

    /// Encodes the notification with the id as `orderID`, a number.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(newOrderStatus, forKey: .newOrderStatus)
        try container.encode(userEmail, forKey: .userEmail)
        try container.encode(orderID, forKey: .orderID)
        try container.encode(infoReason, forKey: .infoReason)
    }
}
