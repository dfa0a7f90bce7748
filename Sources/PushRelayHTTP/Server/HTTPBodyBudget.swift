import NIOConcurrencyHelpers

/// The request-body bytes one server holds over all its HTTP/2 connections: bytes whose flow-control window was
/// reopened (so the peer could send more) and that a request still holds. A connection reopens a stream's window
/// only when the budget takes the bytes; once it is spent, peers stall on their windows (back-pressure through
/// HTTP/2 flow control) until requests finish and give their bytes back. A connection that could not get all the
/// bytes it asked for gets what is left and is called back when any are given back: whatever is given back goes to
/// the waiting streams, however little it is.
final class HTTPBodyBudget: Sendable {
    private struct State {
        var used = 0
        var waiters: [ObjectIdentifier: @Sendable () -> Void] = [:]
    }

    /// Most bytes held at once; `nil`: no bound.
    let capacity: Int?
    private let state = NIOLockedValueBox(State())

    init(capacity: Int?) {
        self.capacity = capacity
    }

    /// Bytes held now.
    var used: Int { state.withLockedValue { $0.used } }

    /// Takes up to `count` more bytes for a request that holds `held` already and returns how many it took: all of
    /// them if they fit, or if that request is the only holder (so that one body larger than the budget, up to its
    /// route's limit, still arrives); otherwise what is left of the budget (maybe 0), and `wake` is remembered under
    /// `waiter`, to be called once bytes are given back.
    func acquire(upTo count: Int, held: Int, waiter: ObjectIdentifier, wake: @escaping @Sendable () -> Void) -> Int {
        state.withLockedValue { state in
            if let capacity, state.used > held, state.used + count > capacity {
                state.waiters[waiter] = wake
                let granted = max(capacity - state.used, 0)
                state.used += granted
                return granted
            }
            state.used += count
            return count
        }
    }

    /// Gives `count` bytes back and calls every waiting connection (each tries again on its own event loop).
    func release(_ count: Int) {
        guard count > 0 else { return }
        let waiters = state.withLockedValue { state -> [@Sendable () -> Void] in
            state.used -= count
            guard !state.waiters.isEmpty else { return [] }
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for wake in waiters { wake() }
    }

    /// Forgets a waiting connection (it closed).
    func cancelWait(_ waiter: ObjectIdentifier) {
        _ = state.withLockedValue { $0.waiters.removeValue(forKey: waiter) }
    }
}
