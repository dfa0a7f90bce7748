/// The keys of the device-visible envelope (what FCM hands an iOS app as `userInfo`), named once.
public enum EnvelopeKey {
    /// `gcm.message_id`: the message id, equal to the stream event's id and the sender's `message_id`.
    public static let messageID = "gcm.message_id"
    /// `google.c.sender.id`: the project's sender id.
    public static let senderID = "google.c.sender.id"
    /// `gcm.notification.`: the prefix of the notification's custom keys (objects arrive as JSON text).
    public static let notificationPrefix = "gcm.notification."
    /// `aps`: the alert (`aps.alert.title`, `aps.alert.body`) and `content-available`.
    public static let aps = "aps"
    /// `from`: the sender id, or `/topics/<name>` for a topic send.
    public static let from = "from"
    /// `collapse_key`: the sender's collapse key.
    public static let collapseKey = "collapse_key"
    /// `message_type`: `deleted_messages` when the relay dropped pending messages.
    public static let messageType = "message_type"
}
