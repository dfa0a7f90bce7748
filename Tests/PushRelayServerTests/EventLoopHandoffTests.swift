import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import PushRelayServer

/// The hand-over from the writer thread to event loops, on an embedded loop: what waits runs in order, in one drain
/// per batch, and a batch that comes while (or after) a drain runs gets a drain of its own.
@Suite("Event-loop hand-off")
struct EventLoopHandoffTests {
    @Test("items run in order, one drain per batch; items handed over during a drain run in the next; lanes go on after a burst")
    func batchesRunInOrderAndLanesGoOn() {
        let loop = EmbeddedEventLoop()
        let handoff = EventLoopHandoff()
        let ran = NIOLockedValueBox<[Int]>([])
        for item in 1...3 {
            handoff.execute(on: loop) { ran.withLockedValue { $0.append(item) } }
        }
        #expect(ran.withLockedValue { $0 }.isEmpty, "nothing runs before the loop does")
        loop.run()
        #expect(ran.withLockedValue { $0 } == [1, 2, 3])

        // An item that hands over another: the second runs after the first's whole batch.
        handoff.execute(on: loop) {
            ran.withLockedValue { $0.append(4) }
            handoff.execute(on: loop) { ran.withLockedValue { $0.append(6) } }
        }
        handoff.execute(on: loop) { ran.withLockedValue { $0.append(5) } }
        loop.run()
        loop.run()
        #expect(ran.withLockedValue { $0 } == [1, 2, 3, 4, 5, 6])

        // A burst larger than a lane keeps between drains, then single items again: each batch runs.
        let burst = EventLoopHandoff.keptLaneCapacity + 10
        let count = NIOLockedValueBox(0)
        for _ in 0..<burst { handoff.execute(on: loop) { count.withLockedValue { $0 += 1 } } }
        loop.run()
        #expect(count.withLockedValue { $0 } == burst)
        for round in 1...3 {
            handoff.execute(on: loop) { count.withLockedValue { $0 += 1 } }
            loop.run()
            #expect(count.withLockedValue { $0 } == burst + round)
        }
        try? loop.syncShutdownGracefully()
    }
}
