/// A project's identity inside the store (not its public name or sender id).
public struct ProjectID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The store's row id.
    public var rawValue: Int64

    /// Wraps a row id.
    public init(rawValue: Int64) {
        self.rawValue = rawValue
    }

    /// Orders by row id.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The row id in decimal.
    public var description: String { String(self.rawValue) }
}

/// A registered device's identity inside the store (not its token or secret).
public struct DeviceID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The store's row id.
    public var rawValue: Int64

    /// Wraps a row id.
    public init(rawValue: Int64) {
        self.rawValue = rawValue
    }

    /// Orders by row id.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The row id in decimal.
    public var description: String { String(self.rawValue) }
}

/// A message id: 64 bits, unique in the store, strictly increasing per device (and in fact store-wide), never
/// reused across restarts. Generated as `max(now in microseconds, last + 1)`, so it reads like FCM's ids
/// (`1603214613006763`). On the wire it is the decimal ``description``.
public struct MessageID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The id; always positive.
    public var rawValue: Int64

    /// Wraps an id.
    public init(rawValue: Int64) {
        self.rawValue = rawValue
    }

    /// Parses the decimal wire form (e.g. a `Last-Event-ID` header); nil unless it is a positive 64-bit integer.
    public init?(_ text: some StringProtocol) {
        guard let value = Int64(text), value > 0 else { return nil }
        self.rawValue = value
    }

    /// Orders by id, which is queue order.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The decimal wire form.
    public var description: String { String(self.rawValue) }
}
