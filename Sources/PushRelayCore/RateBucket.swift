/// A token bucket: `perMinute` sends at once, refilled at `perMinute` per minute. The rate a quota allows a device
/// or a topic, as FCM applies it (a burst, then a steady rate), with time passed in so that it is a plain value.
public struct RateBucket: Sendable, Equatable {
    /// The burst, and the sends allowed per minute once it is spent.
    public let perMinute: Int
    /// Tokens in units of 1/(60 × 10⁹), so that a refill (elapsed nanoseconds × `perMinute` units) is exact and
    /// refills of less than one send add up without rounding.
    private var nanoTokens: UInt64
    /// The monotonic time of the last refill, in nanoseconds.
    private var refilledAt: UInt64

    /// One token: the units `perMinute` tokens a minute earn in one nanosecond are `perMinute`.
    private static let scale: UInt64 = 60_000_000_000

    /// A full bucket at `now` (monotonic nanoseconds). `perMinute` must be positive.
    public init(perMinute: Int, now: UInt64) {
        precondition(perMinute > 0, "a rate of 0 means no quota: make no bucket")
        self.perMinute = perMinute
        self.nanoTokens = UInt64(perMinute) * Self.scale
        self.refilledAt = now
    }

    /// Takes one send at `now`; `false` (nothing taken) when the bucket is empty.
    public mutating func take(now: UInt64) -> Bool {
        take(count: 1, now: now)
    }

    /// Takes `count` sends at `now`, all or none: `false` (nothing taken) when the bucket holds fewer. A count above
    /// the burst takes the whole burst (it fits once the bucket is full): a request larger than the quota's burst is
    /// slowed to the quota's rate, not refused for ever.
    public mutating func take(count: Int, now: UInt64) -> Bool {
        refill(now: now)
        let needed = needed(count)
        guard nanoTokens >= needed else { return false }
        nanoTokens -= needed
        return true
    }

    /// Whole seconds until the bucket holds `count` sends (the whole burst when `count` is above it) at the rate it
    /// refills, 0 when it holds them now: the `Retry-After` of a refusal.
    public func secondsUntilAvailable(count: Int = 1, now: UInt64) -> Int {
        var copy = self
        copy.refill(now: now)
        let needed = needed(count)
        guard copy.nanoTokens < needed else { return 0 }
        // perMinute units arrive per nanosecond: the missing part, in whole seconds rounded up.
        let missing = needed - copy.nanoTokens
        let nanoseconds = (missing + UInt64(perMinute) - 1) / UInt64(perMinute)
        return Int((nanoseconds + 999_999_999) / 1_000_000_000)
    }

    /// The units `count` sends take: at most the burst.
    private func needed(_ count: Int) -> UInt64 {
        UInt64(min(max(count, 0), perMinute)) * Self.scale
    }

    /// Whether the bucket has refilled completely by `now`: it then holds nothing a new bucket would not, and can be
    /// forgotten.
    public func isFull(now: UInt64) -> Bool {
        var copy = self
        copy.refill(now: now)
        return copy.nanoTokens == UInt64(perMinute) * Self.scale
    }

    private mutating func refill(now: UInt64) {
        guard now > refilledAt else { return }
        let capacity = UInt64(perMinute) * Self.scale
        // perMinute tokens per 60 s = perMinute × 10⁹ units per 6 × 10¹⁰ ns = perMinute units per nanosecond.
        let earned = (now - refilledAt).multipliedReportingOverflow(by: UInt64(perMinute))
        let added = earned.overflow ? capacity : min(earned.partialValue, capacity)
        nanoTokens = min(capacity, nanoTokens &+ added)
        refilledAt = now
    }
}
