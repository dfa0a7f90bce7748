import PushRelayWire

/// A device group's address, FCM's `notification_key`: `APA91b` followed by base64url characters and nothing else,
/// e.g. `APA91bGHXQBB…9QgnYOEURwm0I3lmyqzk2TXQ`.
///
/// A notification key never contains a `:`, and a ``RegistrationToken`` always has one right after its 22-character
/// instance id, so no text is both: a send's `to` is read as one or the other by its shape alone (as
/// firebase-admin-node's `sendToDeviceGroup` refuses a key with a `:`, which would be a token). Generated keys
/// have 113 random base64url characters after the marker (678 bits), 119 characters in all, like FCM's.
public struct NotificationKey: Sendable, Hashable, CustomStringConvertible {
    /// The key text.
    public let rawValue: String

    /// Wraps `text` if it ``isWellFormed(_:)``.
    public init?(_ text: String) {
        guard Self.isWellFormed(text) else { return nil }
        self.rawValue = text
    }

    private init(unchecked text: String) { self.rawValue = text }

    public var description: String { rawValue }

    /// The marker every key starts with: a token's (a key is shaped like a token's part after the `:`).
    public static let marker = RegistrationToken.marker
    /// Random characters after the marker in generated keys.
    public static let randomLength = 113
    /// The fewest characters accepted after the marker: a token's (22 = 132 bits).
    public static let minimumRandomLength = RegistrationToken.minimumRandomLength
    /// The longest key accepted: a token's.
    public static let maximumLength = RegistrationToken.maximumLength

    /// A new random key from the system's secure generator.
    public static func generate() -> NotificationKey {
        var generator = SecureRandom()
        return generate(using: &generator)
    }

    /// A new key from `generator` (tests pass a seeded one).
    public static func generate(using generator: inout some RandomNumberGenerator) -> NotificationKey {
        NotificationKey(unchecked: marker + Base64URL.randomString(length: randomLength, using: &generator))
    }

    /// Whether `text` has the key format: `APA91b`, then at least 22 characters of `[A-Za-z0-9_-]`, at most 4096 in
    /// all. A text that passes is never a well-formed registration token (it has no `:`).
    public static func isWellFormed(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard utf8.count >= marker.utf8.count + minimumRandomLength, utf8.count <= maximumLength,
            utf8.starts(with: marker.utf8)
        else { return false }
        return utf8.dropFirst(marker.utf8.count).allSatisfy(Base64URL.isAlphabetByte)
    }
}
