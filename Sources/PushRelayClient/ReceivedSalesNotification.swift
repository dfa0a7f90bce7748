/// A sales notification with the id of the message that carried it: an element of
/// ``PushClient/salesNotifications()``.
public struct ReceivedSalesNotification: Sendable, Hashable {
    /// The message id (`gcm.message_id`).
    public let messageID: String
    /// The decoded notification.
    public let notification: SalesNotification

    /// Creates a value.
    public init(messageID: String, notification: SalesNotification) {
        self.messageID = messageID
        self.notification = notification
    }
}
