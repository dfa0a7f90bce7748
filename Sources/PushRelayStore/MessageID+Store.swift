public import PushRelayCore

extension MessageID {
    /// The id as SQLite stores it (a positive `INTEGER`).
    public init(rawValue: Int64) { self.init(UInt64(bitPattern: rawValue)) }

    /// The id as SQLite stores it.
    var rowValue: Int64 { Int64(bitPattern: rawValue) }
}
