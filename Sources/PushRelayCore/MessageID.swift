import PushRelayWire

/// A message id: 64 bits, unique, increasing, written as a decimal string FCM-style (`1603214613006763`).
///
/// Ids come from ``MessageIDGenerator``: microseconds since the Unix epoch, bumped to stay strictly increasing,
/// so an id also tells roughly when the message was accepted.
public struct MessageID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The number.
    public let rawValue: UInt64

    /// An id with this number.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// Parses a decimal id (as in `Last-Event-ID` and `POST /v1/ack`); `nil` for anything else.
    public init?(_ text: some StringProtocol) {
        guard !text.isEmpty, text.utf8.count <= 20, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let value = UInt64(text)
        else { return nil }
        self.rawValue = value
    }

    /// The decimal text.
    public var description: String { String(rawValue) }

    /// Appends the decimal text to `buffer`.
    public func write(into buffer: inout [UInt8]) {
        JSONWriter.appendDecimal(rawValue, to: &buffer)
    }

    public static func < (lhs: MessageID, rhs: MessageID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Hands out strictly increasing ``MessageID``s: `max(now in microseconds, last + 1)`.
///
/// A value type: the owner (one per process, behind its lock or actor) keeps it and calls ``next(now:)``.
/// After a restart, seed it with the largest id in the store (``init(last:)``) so ids keep increasing even if the
/// clock went back.
public struct MessageIDGenerator: Sendable, Hashable {
    /// The last id handed out.
    public private(set) var last: UInt64

    /// A generator whose next id is greater than `last`.
    public init(last: UInt64 = 0) { self.last = last }

    /// The next id for a wall clock reading of `now` microseconds since the Unix epoch.
    public mutating func next(now: UInt64) -> MessageID {
        last = max(now, last &+ 1)
        return MessageID(last)
    }

    /// Reserves `count` consecutive ids (one per target of a multicast) and returns the first; the others are
    /// `first + 1 … first + count - 1`.
    public mutating func next(now: UInt64, count: Int) -> MessageID {
        precondition(count >= 1)
        let first = max(now, last &+ 1)
        last = first &+ UInt64(count - 1)
        return MessageID(first)
    }
}

/// A `multicast_id`: a random positive 63-bit number (FCM's are like `3529387488852107593`).
public struct MulticastID: Sendable, Hashable, CustomStringConvertible {
    /// The number, 1…Int64.max.
    public let value: Int64

    /// An id with this number.
    public init(_ value: Int64) { self.value = value }

    /// A random id.
    public static func generate(using generator: inout some RandomNumberGenerator) -> MulticastID {
        MulticastID(Int64.random(in: 1...Int64.max, using: &generator))
    }

    /// A random id from a fast lock-free generator (a `multicast_id` is an identifier, not a secret; this avoids a
    /// `getrandom` system call per request).
    public static func generate() -> MulticastID {
        let value = Int64(bitPattern: FastRandom.next() >> 1)
        return MulticastID(value == 0 ? 1 : value)
    }

    public var description: String { String(value) }
}
