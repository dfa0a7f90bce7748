import NIOConcurrencyHelpers
import NIOCore

/// Keeps this node's time-to-live-0 messages behind the stored rows it numbered before them.
///
/// Stored rows reach the node's streams through its notification connection, after their commit
/// (``PostgresListener``); time-to-live-0 messages are never stored and go to the streams from the sender's path
/// as soon as ``PostgresStore/enqueue(_:)`` returns. Returning at once, one could reach a stream before a stored row
/// with a lower id, and a client's `Last-Event-ID` naming it would acknowledge that row unseen. So `enqueue` waits
/// here until every stored row numbered so far has been handed over (or will never be: its transaction failed).
final class PostgresDeliveryOrder: Sendable {
    private struct Waiter {
        /// The highest id numbered when it began to wait.
        var id: Int64
        var resume: @Sendable () -> Void
        /// Its time limit, once scheduled.
        var timer: Scheduled<Void>?
    }

    private struct State {
        /// The highest id of a stored row this node numbered.
        var taken: Int64 = 0
        /// Every row this node numbered up to here has been handed to the streams, or was never committed.
        var settled: Int64 = 0
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
    }

    private let state = NIOLockedValueBox(State())
    /// The longest a time-to-live-0 send waits (the notification connection may be down): then it goes anyway
    /// (``PostgresStore/Configuration/transientOrderTimeout``).
    let timeout: Duration
    /// Where the time limits run.
    private let loops: any EventLoopGroup

    init(timeout: Duration, loops: any EventLoopGroup) {
        self.timeout = timeout
        self.loops = loops
    }

    /// The writer numbered stored rows up to `id`.
    func took(upTo id: Int64) {
        self.state.withLockedValue { $0.taken = max($0.taken, id) }
    }

    /// Rows up to `id` were handed over (the listener, after this node's own batch), or never will be (the writer,
    /// after a failed transaction).
    func settled(upTo id: Int64) {
        let ready = self.state.withLockedValue { state -> [Waiter] in
            state.settled = max(state.settled, id)
            guard !state.waiters.isEmpty else { return [] }
            let settled = state.settled
            let due = state.waiters.filter { $0.value.id <= settled }
            for key in due.keys { state.waiters[key] = nil }
            return Array(due.values)
        }
        for waiter in ready {
            waiter.timer?.cancel()
            waiter.resume()
        }
    }

    /// Everything numbered so far counts as handed over (the notification connection came back: every stream reads
    /// the store).
    func settleAll() {
        self.settled(upTo: self.state.withLockedValue { $0.taken })
    }

    /// Returns once every stored row numbered before the call has been handed over, or after ``timeout``.
    func waitForEarlierRows() async {
        guard self.state.withLockedValue({ $0.settled < $0.taken }) else { return }
        await withCheckedContinuation { continuation in
            self.waitForEarlierRows { continuation.resume() }
        }
    }

    /// ``waitForEarlierRows()`` without a task: `resume` runs once — at once when every row numbered so far is
    /// settled, else on the thread that settles them, or on a loop at ``timeout``.
    func waitForEarlierRows(then resume: @escaping @Sendable () -> Void) {
        let key = self.state.withLockedValue { state -> Int? in
            guard state.settled < state.taken else { return nil }
            defer { state.nextWaiter += 1 }
            state.waiters[state.nextWaiter] = Waiter(id: state.taken, resume: resume)
            return state.nextWaiter
        }
        guard let key else { return resume() }
        // Scheduled once the waiter is registered, so that its release cannot come first and be lost.
        let timer = self.loops.next().scheduleTask(in: TimeAmount(self.timeout)) { self.release(key) }
        let kept = self.state.withLockedValue { state -> Bool in
            guard state.waiters[key] != nil else { return false }  // settled meanwhile
            state.waiters[key]?.timer = timer
            return true
        }
        if !kept { timer.cancel() }
    }

    private func release(_ key: Int) {
        let waiter = self.state.withLockedValue { $0.waiters.removeValue(forKey: key) }
        waiter?.resume()
    }
}
