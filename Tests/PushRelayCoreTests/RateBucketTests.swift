import PushRelayCore
import Testing

/// The token bucket behind the message-rate quotas: a burst of `perMinute`, refilled at `perMinute` per minute.
@Suite struct RateBucketTests {
    private static let second: UInt64 = 1_000_000_000

    /// How many of `asked` sends the bucket takes at `now`.
    private func take(_ bucket: inout RateBucket, _ asked: Int, at now: UInt64) -> Int {
        var taken = 0
        for _ in 0..<asked where bucket.take(now: now) { taken += 1 }
        return taken
    }

    @Test func theBurstThenTheRate() {
        var bucket = RateBucket(perMinute: 60, now: 0)
        let burst = take(&bucket, 100, at: 0)
        #expect(burst == 60, "a full bucket gives its burst at once, no more")
        let halfASecond = take(&bucket, 10, at: Self.second / 2)
        #expect(halfASecond == 0, "60 per minute is one per second: half a second earns nothing")
        let oneSecond = take(&bucket, 10, at: Self.second)
        #expect(oneSecond == 1, "fractions add up: the other half makes one")
        let tenMore = take(&bucket, 100, at: 11 * Self.second)
        #expect(tenMore == 10)
    }

    @Test func secondsUntilAvailableIsTheRetryAfterOfARefusal() {
        var bucket = RateBucket(perMinute: 6, now: 0)
        #expect(bucket.secondsUntilAvailable(now: 0) == 0, "a full bucket has one now")
        _ = take(&bucket, 6, at: 0)
        #expect(bucket.secondsUntilAvailable(now: 0) == 10, "6 per minute: one every 10 s")
        #expect(bucket.secondsUntilAvailable(now: 9 * Self.second + 1) == 1, "a part of a second rounds up")
        #expect(bucket.secondsUntilAvailable(now: 10 * Self.second) == 0)
        var fast = RateBucket(perMinute: 6000, now: 0)
        _ = take(&fast, 6000, at: 0)
        #expect(fast.secondsUntilAvailable(now: 0) == 1, "10 ms away is still a whole second")
    }

    @Test func aCountAboveTheBurstTakesAFullBucket() {
        var bucket = RateBucket(perMinute: 6, now: 0)
        let two = bucket.take(count: 2, now: 0)
        #expect(two)
        let tenEarly = bucket.take(count: 10, now: 0)
        #expect(!tenEarly, "ten need the whole burst of 6: 4 are there")
        #expect(bucket.secondsUntilAvailable(count: 10, now: 0) == 20, "two more at one every 10 s")
        #expect(bucket.secondsUntilAvailable(count: 3, now: 0) == 0)
        let tenWhenFull = bucket.take(count: 10, now: 20 * Self.second)
        #expect(tenWhenFull, "a full bucket takes a count above its burst")
        let oneMore = bucket.take(now: 20 * Self.second)
        #expect(!oneMore, "and is empty after it")
    }

    @Test func aQuietBucketRefillsToItsBurstAndNoFurther() {
        var bucket = RateBucket(perMinute: 240, now: 0)
        _ = take(&bucket, 240, at: 0)
        #expect(!bucket.isFull(now: 30 * Self.second))
        #expect(bucket.isFull(now: 60 * Self.second))
        let afterADay = take(&bucket, 1000, at: 86_400 * Self.second)
        #expect(afterADay == 240, "a day of quiet refills the burst, not a day's worth")
    }

    @Test func timeGoingBackwardsGivesNothingAndBreaksNothing() {
        var bucket = RateBucket(perMinute: 2, now: 100 * Self.second)
        _ = take(&bucket, 2, at: 100 * Self.second)
        let earlier = take(&bucket, 1, at: 50 * Self.second)
        #expect(earlier == 0)
        let later = take(&bucket, 5, at: 160 * Self.second)
        #expect(later == 2)
    }
}
