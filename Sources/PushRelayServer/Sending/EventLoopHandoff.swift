import NIOConcurrencyHelpers
public import NIOCore

/// Hands work from another thread (the store's writer) to event loops, one wake-up per loop per batch.
///
/// The writer completes a whole group of requests, and hands a committed batch to many device streams, in one
/// go; `EventLoop.execute` per item would wake a loop (a futex and a context switch) for each. Here the first
/// item for a loop schedules one drain on it, and items that arrive before the drain runs join it. The drain runs
/// them in order. ``flush()`` is not needed: a drain is always scheduled while items wait.
public final class EventLoopHandoff: Sendable {
    private final class Lane: Sendable {
        let eventLoop: any EventLoop
        let pending = NIOLockedValueBox<[@Sendable () -> Void]?>(nil)

        init(eventLoop: any EventLoop) {
            self.eventLoop = eventLoop
        }

        func enqueue(_ work: @escaping @Sendable () -> Void) {
            let scheduleDrain = pending.withLockedValue { pending -> Bool in
                if pending == nil {
                    pending = [work]
                    return true
                }
                pending!.append(work)
                return false
            }
            if scheduleDrain {
                eventLoop.execute { self.drain() }
            }
        }

        private func drain() {
            let batch = pending.withLockedValue { pending -> [@Sendable () -> Void] in
                defer { pending = nil }
                return pending ?? []
            }
            for work in batch { work() }
        }
    }

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
