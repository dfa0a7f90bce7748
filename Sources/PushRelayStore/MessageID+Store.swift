public import PushRelayCore

extension MessageID {
    /// The id as SQLite stores it (a positive `INTEGER`).
    public init(rawValue: Int64) { self.init(UInt64(bitPattern: rawValue)) }

    /// The id as SQLite stores it.
    var rowValue: Int64 { Int64(bitPattern: rawValue) }

    /// Parses a decimal id that a store can hold (at most 2⁶³ − 1, the stores' signed 64-bit integer), as a device
    /// names one in `Last-Event-ID` or `POST /v1/ack`; nil for anything else. A larger number names no message, and
    /// would otherwise wrap to a negative row value: acknowledging nothing, and past every id a stream's cursor.
    public init?(storable text: some StringProtocol) {
        guard let id = MessageID(text), id.rawValue <= UInt64(Int64.max) else { return nil }
        self = id
    }
}
