import NIOConcurrencyHelpers
import NIOCore
import PushRelayCore

/// ``RateBucket``s by key (a device, a topic, a project, an address): the table behind every quota of a node.
/// Buckets that have refilled completely are forgotten when the table grows, so memory follows the keys seen within
/// about a minute, not every key ever seen. Not synchronized: its owner keeps it behind a lock.
struct RateTable<Key: Hashable & Sendable>: Sendable {
    private(set) var buckets: [Key: RateBucket] = [:]
    /// Prune when the table reaches this size; doubles with what survives a prune.
    private var pruneAt = 4096

    init() {}

    /// Takes `count` for `key` at `now` from a bucket of `perMinute`: `nil` when taken, else the whole seconds until
    /// the bucket holds them (nothing taken; ``RateBucket/take(count:now:)``).
    mutating func take(_ key: Key, count: Int = 1, perMinute: Int, now: UInt64) -> Int? {
        if buckets.count >= pruneAt {
            buckets = buckets.filter { !$0.value.isFull(now: now) }
            pruneAt = max(4096, buckets.count * 2)
        }
        var bucket = buckets[key] ?? RateBucket(perMinute: perMinute, now: now)
        defer { buckets[key] = bucket }
        return bucket.take(count: count, now: now) ? nil : max(1, bucket.secondsUntilAvailable(count: count, now: now))
    }

    /// Whether `key` could take one now, without taking it: `nil` when it could, else the seconds to wait.
    func wait(_ key: Key, now: UInt64) -> Int? {
        guard let bucket = buckets[key] else { return nil }
        let seconds = bucket.secondsUntilAvailable(now: now)
        return seconds == 0 ? nil : seconds
    }
}

/// One quota of a node: `perMinute` per key (a burst, then that rate) in a ``RateTable`` behind a lock, on the
/// monotonic clock (or `now`, for tests). A rate of 0 is no quota: everything is admitted and nothing is tracked.
/// Shared by every event loop: the lock is held for a dictionary look-up and a bucket update.
final class RateLimiter<Key: Hashable & Sendable>: Sendable {
    /// Allowed per key per minute (0: no quota).
    let perMinute: Int
    private let table = NIOLockedValueBox(RateTable<Key>())
    private let now: @Sendable () -> UInt64

    init(perMinute: Int, now: @escaping @Sendable () -> UInt64 = { NIODeadline.now().uptimeNanoseconds }) {
        self.perMinute = perMinute
        self.now = now
    }

    /// Keys with a bucket in the table (test hook).
    var tracked: Int { table.withLockedValue { $0.buckets.count } }

    /// Takes `count` for `key`, all or none: `nil` when taken (or no quota), else the whole seconds until the bucket
    /// holds them.
    func admit(_ key: Key, count: Int = 1) -> Int? {
        guard perMinute > 0 else { return nil }
        let now = self.now(), perMinute = self.perMinute
        return table.withLockedValue { $0.take(key, count: count, perMinute: perMinute, now: now) }
    }

    /// Takes one for each of `keys` under one lock: whether each was admitted, in order.
    func admit(_ keys: [Key]) -> [Bool] {
        guard perMinute > 0, !keys.isEmpty else { return Array(repeating: true, count: keys.count) }
        let now = self.now(), perMinute = self.perMinute
        return table.withLockedValue { table in keys.map { table.take($0, perMinute: perMinute, now: now) == nil } }
    }
}
