import PushRelayWire

/// A registration token: the public address of one app instance, in FCM's shape
/// `<instance id>:APA91b<random>`, e.g.
/// `eeDh2Sd5HknG1zdC1w1UBD:APA91bFKGr99Cpj7q1Es0oexCeoXf9qinT6GuI-pvCouR8AKueLR1zNc_QZVv_…`.
///
/// Generated tokens have a 22-character instance id (≈132 random bits; the first character is alphanumeric so a
/// token never looks like a command-line option) and 110 base64url characters after `APA91b` (660 random bits),
/// 139 characters in all like the seed scenario's token.
public struct RegistrationToken: Sendable, Hashable, CustomStringConvertible {
    /// The token text.
    public let rawValue: String

    /// Wraps `text` if it ``isWellFormed(_:)``.
    public init?(_ text: String) {
        guard Self.isWellFormed(text) else { return nil }
        self.rawValue = text
    }

    private init(unchecked text: String) { self.rawValue = text }

    public var description: String { rawValue }

    /// The instance id before the `:`.
    public var instanceID: Substring {
        rawValue.split(separator: ":", maxSplits: 1).first ?? ""
    }

    /// Length of the instance id part.
    public static let instanceIDLength = 22
    /// The marker that starts the second part.
    public static let marker = "APA91b"
    /// Random characters after the marker in generated tokens.
    public static let randomLength = 110
    /// The fewest characters accepted after the marker (22 = 132 bits).
    public static let minimumRandomLength = 22
    /// The longest token accepted.
    public static let maximumLength = 4096

    /// A new random token from the system's secure generator.
    public static func generate() -> RegistrationToken {
        var generator = SecureRandom()
        return generate(using: &generator)
    }

    /// A new token from `generator` (tests pass a seeded one).
    public static func generate(using generator: inout some RandomNumberGenerator) -> RegistrationToken {
        // The first character is a letter or a digit, never `-`: tokens are passed as command-line arguments
        // (`pushrelay send --to TOKEN`, `curl … -d`), where a leading dash reads as an option.
        let lead = String(decoding: [Base64URL.randomAlphanumeric(using: &generator)], as: UTF8.self)
        let instance = lead + Base64URL.randomString(length: instanceIDLength - 1, using: &generator)
        let random = Base64URL.randomString(length: randomLength, using: &generator)
        return RegistrationToken(unchecked: instance + ":" + marker + random)
    }

    /// Whether `text` has the token format: 22 characters of `[A-Za-z0-9_-]`, `:`, `APA91b`, then at least 22
    /// characters of `[A-Za-z0-9_-]`, at most 4096 in all. A text that fails is `InvalidRegistration`; one that
    /// passes but is unknown is `NotRegistered`.
    public static func isWellFormed(_ text: String) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { isWellFormed(bytes: $0) }
            ?? Array(text.utf8).withUnsafeBufferPointer { isWellFormed(bytes: $0) }
    }

    /// ``isWellFormed(_:)`` over the token's UTF-8 bytes (read through a buffer: a span's per-byte checks cost more
    /// than the test itself, and this runs for every token of every send).
    private static func isWellFormed(bytes span: UnsafeBufferPointer<UInt8>) -> Bool {
        let headLength = instanceIDLength + 1 + 6
        guard span.count >= headLength + minimumRandomLength, span.count <= maximumLength else { return false }
        guard Base64URL.isAlphabet(UnsafeBufferPointer(rebasing: span[0..<instanceIDLength])) else { return false }
        guard span[instanceIDLength] == UInt8(ascii: ":"), span[instanceIDLength + 1] == UInt8(ascii: "A"),
            span[instanceIDLength + 2] == UInt8(ascii: "P"), span[instanceIDLength + 3] == UInt8(ascii: "A"),
            span[instanceIDLength + 4] == UInt8(ascii: "9"), span[instanceIDLength + 5] == UInt8(ascii: "1"),
            span[instanceIDLength + 6] == UInt8(ascii: "b")
        else { return false }
        return Base64URL.isAlphabet(UnsafeBufferPointer(rebasing: span[headLength...]))
    }
}
