import PushRelayCore

/// ``RateBucket``s by key (a device, a topic, a project, an address): the table behind every quota of a node.
/// Buckets that have refilled completely are forgotten when the table grows, so memory follows the keys seen within
/// about a minute, not every key ever seen. Not synchronized: its owner keeps it behind a lock.
struct RateTable<Key: Hashable & Sendable>: Sendable {
    private(set) var buckets: [Key: RateBucket] = [:]
    /// Prune when the table reaches this size; doubles with what survives a prune.
    private var pruneAt = 4096

    init() {}

    /// Takes one for `key` at `now` from a bucket of `perMinute`: `nil` when taken, else the whole seconds until
    /// the bucket holds one again (nothing taken).
    mutating func take(_ key: Key, count: Int = 1, perMinute: Int, now: UInt64) -> Int? {
        if buckets.count >= pruneAt {
            buckets = buckets.filter { !$0.value.isFull(now: now) }
            pruneAt = max(4096, buckets.count * 2)
        }
        var bucket = buckets[key] ?? RateBucket(perMinute: perMinute, now: now)
        defer { buckets[key] = bucket }
        return bucket.take(count: count, now: now) ? nil : max(1, bucket.secondsUntilAvailable(now: now))
    }

    /// Whether `key` could take one now, without taking it: `nil` when it could, else the seconds to wait.
    func wait(_ key: Key, now: UInt64) -> Int? {
        guard let bucket = buckets[key] else { return nil }
        let seconds = bucket.secondsUntilAvailable(now: now)
        return seconds == 0 ? nil : seconds
    }
}
