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
