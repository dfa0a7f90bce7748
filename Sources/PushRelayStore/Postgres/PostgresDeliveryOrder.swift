import NIOConcurrencyHelpers

/// Keeps this node's time-to-live-0 messages behind the stored rows it numbered before them.
///
/// Stored rows reach the node's streams through its notification connection, after their commit
/// (``PostgresListener``); time-to-live-0 messages are never stored and go to the streams from the sender's path
/// as soon as ``PostgresStore/enqueue(_:)`` returns. Returning at once, one could reach a stream before a stored row
/// with a lower id, and a client's `Last-Event-ID` naming it would acknowledge that row unseen. So `enqueue` waits
/// here until every stored row numbered so far has been handed over (or will never be: its transaction failed).
final class PostgresDeliveryOrder: Sendable {
    private struct State {
        /// The highest id of a stored row this node numbered.
        var taken: Int64 = 0
        /// Every row this node numbered up to here has been handed to the streams, or was never committed.
        var settled: Int64 = 0
        var waiters: [Int: (id: Int64, continuation: CheckedContinuation<Void, Never>)] = [:]
        var nextWaiter = 0
    }

    private let state = NIOLockedValueBox(State())
    /// The longest a time-to-live-0 send waits (the notification connection may be down): then it goes anyway
    /// (``PostgresStore/Configuration/transientOrderTimeout``).
    let timeout: Duration

    init(timeout: Duration) {
        self.timeout = timeout
    }

    /// The writer numbered stored rows up to `id`.
    func took(upTo id: Int64) {
        self.state.withLockedValue { $0.taken = max($0.taken, id) }
    }

    /// Rows up to `id` were handed over (the listener, after this node's own batch), or never will be (the writer,
    /// after a failed transaction).
    func settled(upTo id: Int64) {
        let ready = self.state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.settled = max(state.settled, id)
            let settled = state.settled
            let due = state.waiters.filter { $0.value.id <= settled }
            for key in due.keys { state.waiters[key] = nil }
            return due.values.map(\.continuation)
        }
        for continuation in ready { continuation.resume() }
    }

    /// Everything numbered so far counts as handed over (the notification connection came back: every stream reads
    /// the store).
    func settleAll() {
        self.settled(upTo: self.state.withLockedValue { $0.taken })
    }

    /// Returns once every stored row numbered before the call has been handed over, or after ``timeout``.
    func waitForEarlierRows() async {
        guard self.state.withLockedValue({ $0.settled < $0.taken }) else { return }
        let timer = NIOLockedValueBox<Task<Void, Never>?>(nil)
        await withCheckedContinuation { continuation in
            let key = self.state.withLockedValue { state -> Int? in
                guard state.settled < state.taken else { return nil }  // settled meanwhile
                defer { state.nextWaiter += 1 }
                state.waiters[state.nextWaiter] = (state.taken, continuation)
                return state.nextWaiter
            }
            guard let key else { return continuation.resume() }
            // Started once the waiter is registered, so that its release cannot come first and be lost.
            timer.withLockedValue { [timeout] in
                $0 = Task {
                    try? await Task.sleep(for: timeout)
                    self.release(key)
                }
            }
        }
        timer.withLockedValue { $0 }?.cancel()
    }

    private func release(_ key: Int) {
        let waiter = self.state.withLockedValue { $0.waiters.removeValue(forKey: key) }
        waiter?.continuation.resume()
    }
}
