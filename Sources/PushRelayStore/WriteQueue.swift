import NIOConcurrencyHelpers

/// One unit of work for the writer thread: `perform` runs inside a write transaction (possibly shared with other
/// requests); `complete` is called once after the commit (nil) or with the error that failed the request.
final class WriteRequest: @unchecked Sendable {
    /// Whether the request runs inside its own savepoint: a failure then undoes only this request and the group
    /// goes on. Without it (the hot path: enqueue, ack) a failure rolls the whole group back and every request of
    /// the group is retried alone.
    let isolated: Bool
    let perform: (WriteTransaction) throws -> Void
    let complete: ((any Error)?) -> Void

    init(
        isolated: Bool,
        perform: @escaping (WriteTransaction) throws -> Void,
        complete: @escaping ((any Error)?) -> Void
    ) {
        self.isolated = isolated
        self.perform = perform
        self.complete = complete
    }
}

/// The queue between the callers and the writer thread: a mutex, a condition variable and an array. The writer takes
/// everything pending at once: that is the group of the next commit.
final class WriteQueue: @unchecked Sendable {
    // Condition value 1: the writer has something to do (requests while not suspended, or closing).
    private let condition = ConditionLock(value: 0)
    private var requests: [WriteRequest] = []
    private var closing = false
    private var suspended = false

    /// Adds a request; false if the queue is closing.
    func submit(_ request: WriteRequest) -> Bool {
        self.condition.lock()
        guard !self.closing else {
            self.condition.unlock()
            return false
        }
        self.requests.append(request)
        self.condition.unlock(withValue: self.readyValue)
        return true
    }

    /// Takes every pending request, waiting for one when `wait` is true. `closing` is true once ``close()`` was called.
    func takeAll(wait: Bool) -> (requests: [WriteRequest], closing: Bool) {
        if wait {
            self.condition.lock(whenValue: 1)
        } else {
            self.condition.lock()
        }
        var taken: [WriteRequest] = []
        if !self.suspended || self.closing {
            swap(&taken, &self.requests)
        }
        let closing = self.closing
        self.condition.unlock(withValue: self.readyValue)
        return (taken, closing)
    }

    /// Refuses new requests and wakes the writer so that it finishes what is queued and stops.
    func close() {
        self.condition.lock()
        self.closing = true
        self.condition.unlock(withValue: self.readyValue)
    }

    /// Holds requests in the queue until ``resume()`` (tests: makes a group deterministic).
    func suspend() {
        self.condition.lock()
        self.suspended = true
        self.condition.unlock(withValue: self.readyValue)
    }

    /// Lets the writer take requests again.
    func resume() {
        self.condition.lock()
        self.suspended = false
        self.condition.unlock(withValue: self.readyValue)
    }

    /// Requests waiting (tests).
    var count: Int {
        self.condition.lock()
        defer { self.condition.unlock() }
        return self.requests.count
    }

    // Call with the lock held.
    private var readyValue: Int {
        (self.closing || (!self.requests.isEmpty && !self.suspended)) ? 1 : 0
    }
}
