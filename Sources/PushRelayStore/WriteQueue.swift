import Foundation

/// One unit of work for the writer thread: `perform` runs inside a write transaction (possibly shared with other
/// requests); `complete` is called once after the commit (nil) or with the error that failed the request.
final class WriteRequest: @unchecked Sendable {
    /// Whether the request runs inside its own savepoint: a failure then undoes only this request and the group
    /// goes on. Without it (the hot path: enqueue, ack) a failure rolls the whole group back and every request of
    /// the group is retried alone.
    let isolated: Bool
    /// Runs the request in the group's transaction; what it returns hands its result on once the group committed.
    private let body: (WriteTransaction) throws -> () -> Void
    private let fail: (any Error) -> Void
    /// Set by ``perform(_:)``: the success to report after the commit.
    private var succeed: (() -> Void)?

    /// `body` runs on the writer thread inside the transaction and returns the call that reports its success (the
    /// result travels in that closure's context: no box of a generic type, whose release looked its metadata up
    /// at run time, ≈ 900 instructions a send); `fail` reports an error instead.
    init(
        isolated: Bool,
        perform body: @escaping (WriteTransaction) throws -> () -> Void,
        fail: @escaping (any Error) -> Void
    ) {
        self.isolated = isolated
        self.body = body
        self.fail = fail
    }

    /// Runs the request in `transaction` (the writer thread). A request of a group that failed runs again alone:
    /// what an earlier run left is cleared.
    func perform(_ transaction: WriteTransaction) throws {
        succeed = nil
        succeed = try body(transaction)
    }

    /// Reports the outcome once the group is over: `error` (the group's failure, or this request's own in a group
    /// that committed), else its success.
    func complete(_ error: (any Error)?) {
        if let error {
            fail(error)
        } else if let succeed {
            succeed()
        } else {
            fail(StoreError.unavailable("write produced no result"))
        }
        succeed = nil
    }
}

/// The queue between the callers and the writer thread: a mutex, a condition variable and an array. The writer takes
/// everything pending at once: that is the group of the next commit. A writer driven by an event loop instead of a
/// thread of its own (``SQLiteStore/Configuration/commitEventLoop``) is called by ``setWake(_:)``'s function rather
/// than signalled.
///
/// Bounded: past ``capacity`` pending requests ``submit(_:)`` refuses (the caller answers `Unavailable`), so a writer
/// that falls behind (a slow disk) cannot make memory grow without bound. Callers signal the writer only when it
/// waits for what they bring (one wake-up per group, not per request).
final class WriteQueue: @unchecked Sendable {
    /// What ``submit(_:)`` did.
    enum Submission: Equatable {
        case accepted
        /// ``capacity`` requests are pending: try again later.
        case full
        /// The store is closing.
        case closed
    }

    private let condition = NSCondition()
    private var requests: [WriteRequest] = []
    private var closing = false
    private var suspended = false
    /// While the writer waits: how many pending requests wake it (0: it is not waiting).
    private var wakeAt = 0
    /// The most requests that may wait.
    let capacity: Int
    /// Called (outside the lock) when a writer that is not a waiting thread must come: a request entered an empty
    /// queue that is not suspended, a suspended queue holding requests was resumed, or the queue was closed.
    private var wake: (@Sendable () -> Void)?

    init(capacity: Int = 65_536) {
        self.capacity = max(capacity, 1)
    }

    /// Adds a request.
    func submit(_ request: WriteRequest) -> Submission {
        self.condition.lock()
        guard !self.closing else {
            self.condition.unlock()
            return .closed
        }
        guard self.requests.count < self.capacity else {
            self.condition.unlock()
            return .full
        }
        self.requests.append(request)
        if self.wakeAt > 0, self.requests.count >= self.wakeAt, !self.suspended {
            self.condition.signal()
        }
        let wake = self.requests.count == 1 && !self.suspended ? self.wake : nil
        self.condition.unlock()
        wake?()
        return .accepted
    }

    /// Makes `wake` the way the writer is called for (see ``wake``), for a writer that does not wait in
    /// ``takeAll(wait:gather:)``.
    func setWake(_ wake: @escaping @Sendable () -> Void) {
        self.condition.lock()
        self.wake = wake
        self.condition.unlock()
    }

    /// How long ``takeAll(wait:gather:)`` waits for more requests once it has one: until `count` are pending, for at
    /// most `timeout`.
    struct Gather: Equatable {
        var count: Int
        var timeout: Duration
        /// No wait: take what is pending.
        static let none = Gather(count: 0, timeout: .zero)
    }

    /// Takes every pending request, waiting for one when `wait` is true. Then, when fewer than `gather.count` are
    /// pending, it waits up to `gather.timeout` for that many (``GroupGather``). `closing` is true once ``close()``
    /// was called.
    func takeAll(wait: Bool, gather: Gather = .none) -> (requests: [WriteRequest], closing: Bool) {
        self.condition.lock()
        defer { self.condition.unlock() }
        if wait {
            self.wakeAt = 1
            while !self.closing && (self.suspended || self.requests.isEmpty) {
                self.condition.wait()
            }
        }
        if gather.count > 1, gather.timeout > .zero, !self.closing, !self.suspended, !self.requests.isEmpty,
            self.requests.count < gather.count
        {
            self.wakeAt = gather.count
            let deadline = Date(timeIntervalSinceNow: Double(gather.timeout.components.attoseconds) / 1e18
                + Double(gather.timeout.components.seconds))
            while !self.closing && !self.suspended && self.requests.count < gather.count {
                if !self.condition.wait(until: deadline) { break }
            }
        }
        self.wakeAt = 0
        var taken: [WriteRequest] = []
        if !self.suspended || self.closing {
            swap(&taken, &self.requests)
        }
        return (taken, self.closing)
    }

    /// Refuses new requests and wakes the writer so that it finishes what is queued and stops.
    func close() {
        self.condition.lock()
        self.closing = true
        self.condition.broadcast()
        let wake = self.wake
        self.condition.unlock()
        wake?()
    }

    /// Holds requests in the queue until ``resume()`` (tests: makes a group deterministic).
    func suspend() {
        self.condition.lock()
        self.suspended = true
        self.condition.unlock()
    }

    /// Lets the writer take requests again.
    func resume() {
        self.condition.lock()
        self.suspended = false
        self.condition.broadcast()
        let wake = self.requests.isEmpty ? nil : self.wake
        self.condition.unlock()
        wake?()
    }

    /// Requests waiting (tests).
    var count: Int {
        self.condition.lock()
        defer { self.condition.unlock() }
        return self.requests.count
    }
}
