import Testing

@testable import PushRelayClient

@Suite("StreamReceiveBudget: the unread bytes of a stream against a limit")
struct StreamReceiveBudgetTests {
    @Test("chunks are delivered while the unread bytes fit; reading makes room again")
    func deliversWithinTheLimit() {
        var budget = StreamReceiveBudget(limit: 100)
        #expect(budget.received(60) == .deliver)
        #expect(budget.received(40) == .deliver)
        #expect(budget.buffered == 100)
        budget.consumed(60)
        #expect(budget.received(60) == .deliver)
        budget.consumed(40)
        budget.consumed(60)
        #expect(budget.buffered == 0)
        #expect(budget.highWaterMark == 100)
        #expect(!budget.overflowed)
    }

    @Test("a chunk past the limit overflows the stream; nothing is delivered after it, even once it is read")
    func overflowIsFinal() {
        var budget = StreamReceiveBudget(limit: 100)
        #expect(budget.received(90) == .deliver)
        #expect(budget.received(11) == .overflow)
        #expect(budget.overflowed)
        #expect(budget.buffered == 90)
        budget.consumed(90)
        #expect(budget.received(1) == .ignore)
        #expect(budget.highWaterMark == 90)
    }

    @Test("a chunk larger than the limit still goes into an empty buffer (progress), not into a non-empty one")
    func oversizedChunk() {
        var budget = StreamReceiveBudget(limit: 100)
        #expect(budget.received(150) == .deliver)
        #expect(budget.received(1) == .overflow)
        var other = StreamReceiveBudget(limit: 100)
        #expect(other.received(1) == .deliver)
        #expect(other.received(150) == .overflow)
    }
}
