import NIOConcurrencyHelpers
public import NIOCore

/// Hands work from another thread (the store's writer) to event loops, one wake-up per loop per batch.
///
/// The writer completes a whole group of requests, and hands a committed batch to many device streams, in one
/// go; `EventLoop.execute` per item would wake a loop (a futex and a context switch) for each. Here the first
/// item for a loop schedules one drain on it, and items that arrive before the drain runs join it. The drain runs
/// them in order. ``flush()`` is not needed: a drain is always scheduled while items wait.
public final class EventLoopHandoff: Sendable {
    private final class Lane: @unchecked Sendable {
        /// What waits for the loop, and whether a drain is scheduled for it.
        struct Pending {
            var work: [@Sendable () -> Void] = []
            var drainScheduled = false
        }

        let eventLoop: any EventLoop
        let pending = NIOLockedValueBox(Pending())
        /// The array the last drain emptied, kept with its capacity and swapped in by the next drain: a batch does
        /// not allocate an array. Touched by drains only, which run on `eventLoop` one after another (hence
        /// `@unchecked Sendable`).
        private var spare: [@Sendable () -> Void] = []

        init(eventLoop: any EventLoop) {
            self.eventLoop = eventLoop
        }

        func enqueue(_ work: @escaping @Sendable () -> Void) {
            let scheduleDrain = pending.withLockedValue { pending -> Bool in
                pending.work.append(work)
                if pending.drainScheduled { return false }
                pending.drainScheduled = true
                return true
            }
            if scheduleDrain {
                eventLoop.execute { self.drain() }
            }
        }

        private func drain() {
            var batch = spare
            spare = []
            pending.withLockedValue { pending in
                swap(&batch, &pending.work)
                pending.drainScheduled = false
            }
            for work in batch { work() }
            // A burst's array is let go rather than held for good.
            if batch.capacity <= EventLoopHandoff.keptLaneCapacity {
                batch.removeAll(keepingCapacity: true)
                spare = batch
            }
        }
    }

    /// The largest array a lane keeps between drains (16 bytes an entry).
    static let keptLaneCapacity = 4096

    private let lanes = NIOLockedValueBox<[ObjectIdentifier: Lane]>([:])

    public init() {}

    /// Runs `work` on `eventLoop`: joins the drain already scheduled there, or schedules one.
    public func execute(on eventLoop: any EventLoop, _ work: @escaping @Sendable () -> Void) {
        lane(for: eventLoop).enqueue(work)
    }

    private func lane(for eventLoop: any EventLoop) -> Lane {
        let key = ObjectIdentifier(eventLoop)
        return lanes.withLockedValue { lanes in
            if let lane = lanes[key] { return lane }
            let lane = Lane(eventLoop: eventLoop)
            lanes[key] = lane
            return lane
        }
    }
}
