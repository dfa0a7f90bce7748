import NIOCore
import Testing

@testable import PushRelayHTTP

/// The allowance of HTTP/2 frames that ask for no work: a burst, a refill rate, and two more per request opened.
@Suite struct HTTP2ControlFrameBudgetTests {
    private let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    /// How many frames the budget lets through at `now`, out of `asked`.
    private func spend(_ budget: inout HTTP2ControlFrameBudget, _ asked: Int, at now: NIODeadline) -> Int {
        var spent = 0
        for _ in 0..<asked where budget.spend(now: now) { spent += 1 }
        return spent
    }

    @Test func theBurstIsSpentThenRefusedUntilTimePasses() {
        var budget = HTTP2ControlFrameBudget(burst: 100, ratePerSecond: 10, now: start)
        let burst = spend(&budget, 101, at: start)
        #expect(burst == 100, "the burst passes, the 101st frame at once is a flood")
        let early = spend(&budget, 1, at: start + .milliseconds(50))
        #expect(early == 0, "50 ms earn less than one frame at 10/s")
        let later = spend(&budget, 5, at: start + .milliseconds(200))
        #expect(later == 2, "200 ms earn two frames at 10/s")
    }

    @Test func theRefillNeverExceedsTheBurst() {
        var budget = HTTP2ControlFrameBudget(burst: 5, ratePerSecond: 1000, now: start)
        _ = spend(&budget, 5, at: start)
        let afterAnHour = spend(&budget, 100, at: start + .seconds(3600))
        #expect(afterAnHour == 5, "an hour of quiet refills the burst, not 3.6 million frames")
    }

    @Test func eachRequestEarnsTwoFramesUpToTheBurst() {
        var budget = HTTP2ControlFrameBudget(burst: 10, ratePerSecond: 0, now: start)
        _ = spend(&budget, 10, at: start)
        let refilled = spend(&budget, 1, at: start + .seconds(10))
        #expect(refilled == 0, "a rate of 0 never refills")
        budget.earn()
        let earned = spend(&budget, 5, at: start)
        #expect(earned == 2)
        for _ in 0..<100 { budget.earn() }
        let capped = spend(&budget, 100, at: start)
        #expect(capped == 10)
    }
}
