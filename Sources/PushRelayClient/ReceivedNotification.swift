/// An app payload decoded from a message, with the message that carried it: an element of
/// ``PushClient/notifications(of:key:)``.
public struct ReceivedNotification<Payload: Sendable>: Sendable {
    /// The message id (`gcm.message_id`).
    public let messageID: String
    /// The decoded payload.
    public let payload: Payload
    /// The whole message (title, body, the other keys).
    public let message: PushMessage

    /// Creates a value.
    public init(messageID: String, payload: Payload, message: PushMessage) {
        self.messageID = messageID
        self.payload = payload
        self.message = message
    }
}

extension ReceivedNotification: Equatable where Payload: Equatable {}
extension ReceivedNotification: Hashable where Payload: Hashable {}
