import NIOConcurrencyHelpers

/// Rows of one table (topics, device groups) that device expiry could not lock, another transaction holding them,
/// and so could not check for a subscriber or member left: the next purge checks them again, so that none keeps its
/// row after its last one for want of a later change. At most ``limit``; a node that stops forgets them (they are
/// rare: a subscribe or an `add` racing an expiry).
final class PostgresSkippedRows: Sendable {
    private let ids = NIOLockedValueBox(Set<Int64>())
    /// The most rows remembered.
    static let limit = 100_000

    /// Remembers the rows of `requested` that are not among `locked`.
    func remember(requested: [Int64], locked: [Int64]) {
        guard locked.count < requested.count else { return }
        let skipped = Set(requested).subtracting(locked)
        ids.withLockedValue { pending in
            for id in skipped where pending.count < Self.limit { pending.insert(id) }
        }
    }

    /// At most `limit` of the rows remembered, for a purge to check.
    func pending(limit: Int) -> [Int64] {
        ids.withLockedValue { Array($0.prefix(max(limit, 0))) }
    }

    /// Forgets the rows a purge is done with.
    func settle(_ done: [Int64]) {
        guard !done.isEmpty else { return }
        ids.withLockedValue { $0.subtract(done) }
    }

    /// How many rows are remembered (tests).
    var count: Int { ids.withLockedValue { $0.count } }
}
