/// FCM's limits as PushRelay applies them (fcm-legacy.md §3).
public enum FCMLimits {
    /// Tokens in one `registration_ids`: 1…1000.
    public static let maxRegistrationIDs = 1000
    /// Payload bytes (keys + values of `data` and `notification`, see ``FCMPayloadSize``) for token sends.
    public static let maxPayloadBytes = 4096
    /// Payload bytes for topic and condition sends. FCM's legacy error text said 2048, current documentation says
    /// 4096 for every message type; PushRelay takes 4096 so a message never fails only because of its addressing.
    public static let maxTopicPayloadBytes = 4096
    /// The longest `time_to_live`, 28 days in seconds.
    public static let maxTimeToLive: Int64 = 2_419_200
    /// `time_to_live` when the request gives none: 4 weeks, the maximum.
    public static let defaultTimeToLive: Int64 = 2_419_200
    /// Topic references in one `condition`.
    public static let maxConditionTopics = 5
    /// The longest `condition`, in bytes: five topics of the longest name with operators, parentheses and spaces
    /// fit; anything longer is refused before it is parsed.
    public static let maxConditionLength = 8192
    /// How deep `!` and `(` may nest in a `condition` (together). Five topics never need more than a few levels.
    public static let maxConditionNesting = 16
    /// The longest topic name.
    public static let maxTopicNameLength = 900
    /// Members of one device group (`notification_key`), as FCM: a create or an add that would pass it is refused.
    public static let maxDeviceGroupMembers = 20
    /// The longest `notification_key_name`, in UTF-8 bytes. FCM documents none; a user name or an e-mail address
    /// fits many times over, and the store keeps no unbounded text from a request.
    public static let maxNotificationKeyNameLength = 256
}
