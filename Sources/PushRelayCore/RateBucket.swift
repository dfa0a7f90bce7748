/// A token bucket: `perMinute` sends at once, refilled at `perMinute` per minute. The rate a quota allows a device
/// or a topic, as FCM applies it (a burst, then a steady rate), with time passed in so that it is a plain value.
public struct RateBucket: Sendable, Equatable {
    /// The burst, and the sends allowed per minute once it is spent.
    public let perMinute: Int
    /// Tokens in billionths, so that refills of less than one send add up exactly.
    private var nanoTokens: UInt64
    /// The monotonic time of the last refill, in nanoseconds.
    private var refilledAt: UInt64

    private static let scale: UInt64 = 1_000_000_000

    /// A full bucket at `now` (monotonic nanoseconds). `perMinute` must be positive.
    public init(perMinute: Int, now: UInt64) {
        precondition(perMinute > 0, "a rate of 0 means no quota: make no bucket")
        self.perMinute = perMinute
        self.nanoTokens = UInt64(perMinute) * Self.scale
        self.refilledAt = now
    }

    /// Takes one send at `now`; `false` (nothing taken) when the bucket is empty.
    public mutating func take(now: UInt64) -> Bool {
        refill(now: now)
        guard nanoTokens >= Self.scale else { return false }
        nanoTokens -= Self.scale
        return true
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
        // perMinute tokens per 60 s: elapsed ns × perMinute / 60 tokens, in billionths (elapsed × perMinute / 60).
        let elapsed = now - refilledAt
        let earned = elapsed.multipliedReportingOverflow(by: UInt64(perMinute))
        let added = earned.overflow ? capacity : earned.partialValue / 60
        nanoTokens = min(capacity, nanoTokens &+ min(added, capacity))
        refilledAt = now
    }
}
