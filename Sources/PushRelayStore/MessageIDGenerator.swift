import PushRelayCore
/// Hands out message ids: `max(now in microseconds, last + 1)`. Strictly increasing for the life of the database:
/// a position at least as far as the last id is persisted with the commits (SQLite: a second ahead, see
/// ``WriteTransaction/idReservationMicros``) and recovered (with the largest stored id) at open.
struct MessageIDGenerator: Sendable {
    /// The last id handed out.
    private(set) var last: Int64

    /// Starts after `last`.
    init(last: Int64) {
        self.last = last
    }

    /// Moves past `id` (an id handed out elsewhere, e.g. by another node through the database).
    mutating func advance(past id: Int64) {
        self.last = max(self.last, id)
    }

    /// The next id.
    mutating func next(nowMicros: Int64) -> Int64 {
        self.last = max(nowMicros, self.last + 1)
        return self.last
    }
}
