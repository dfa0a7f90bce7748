/// A project's sender id: a decimal number of 11 digits in generated ids (FCM's look, e.g. `19283323559`).
/// It is the envelope's `google.c.sender.id` and its `from` for token sends.
public struct SenderID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The number.
    public let value: UInt64

    /// A sender id with this number.
    public init(_ value: UInt64) { self.value = value }

    /// Parses 1…20 decimal digits.
    public init?(_ text: String) {
        guard !text.isEmpty, text.utf8.count <= 20, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let value = UInt64(text)
        else { return nil }
        self.value = value
    }

    /// A random 11-digit sender id (10,000,000,000…99,999,999,999).
    public static func generate(using generator: inout some RandomNumberGenerator) -> SenderID {
        SenderID(UInt64.random(in: 10_000_000_000...99_999_999_999, using: &generator))
    }

    /// A random 11-digit sender id from the system generator.
    public static func generate() -> SenderID {
        var generator = SecureRandom()
        return generate(using: &generator)
    }

    /// The decimal text.
    public var description: String { String(value) }

    public static func < (lhs: SenderID, rhs: SenderID) -> Bool { lhs.value < rhs.value }
}
