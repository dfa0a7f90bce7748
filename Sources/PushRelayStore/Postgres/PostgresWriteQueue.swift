import PushRelayCore
import NIOConcurrencyHelpers

/// One unit of work for the PostgreSQL writer.
enum PostgresWriteJob: Sendable {
    /// A send or an acknowledgement: consecutive hot jobs share one transaction.
    case hot(PostgresHotRequest)
    /// Anything else (projects, devices, topics, purge): its own transaction.
    case isolated(PostgresIsolatedRequest)
}

/// A send or an acknowledgement, resolved after the commit of its group.
struct PostgresHotRequest: Sendable {
    enum Kind: Sendable {
        case enqueue([NewMessage])
        case acknowledge(DeviceID, [MessageID])
        case acknowledgeUpTo(DeviceID, MessageID)
    }

    enum Result: Sendable {
        case enqueued([EnqueueResult])
        case acknowledged(Int)
    }

    let kind: Kind
    /// Called once with the group's outcome, on the writer's task: a caller without a task of its own (a route on
    /// an event loop) is answered from here, without one more hop through the cooperative pool.
    let complete: @Sendable (Swift.Result<Result, any Error>) -> Void
}

/// A request that runs in its own transaction; `run` resumes its caller itself.
struct PostgresIsolatedRequest: Sendable {
    let perform: @Sendable (PostgresWriteContext) async throws -> Void
    let complete: @Sendable ((any Error)?) -> Void
}

/// The queue between callers and the writer task: a lock, an array and the writer's continuation while it waits.
/// The writer takes everything pending at once.
final class PostgresWriteQueue: Sendable {
    fileprivate struct State: Sendable {
        var jobs: [PostgresWriteJob] = []
        var waiter: CheckedContinuation<Void, Never>?
        var closing = false
        var suspended = false
        var fanOutDue = false
    }

    private let state = NIOLockedValueBox(State())

    /// Adds a job; false when the queue is closing.
    func submit(_ job: PostgresWriteJob) -> Bool {
        let (accepted, waiter) = self.state.withLockedValue { state -> (Bool, CheckedContinuation<Void, Never>?) in
            guard !state.closing else { return (false, nil) }
            state.jobs.append(job)
            return (true, state.suspended ? nil : state.takeWaiter())
        }
        waiter?.resume()
        return accepted
    }

    /// Asks the writer to look for topic messages to expand.
    func requestFanOut() {
        let waiter = self.state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            state.fanOutDue = true
            return state.takeWaiter()
        }
        waiter?.resume()
    }

    /// Waits for jobs (or a fan-out request, or closing) and takes them all.
    func next() async -> (jobs: [PostgresWriteJob], fanOut: Bool, closing: Bool) {
        while true {
            let taken = self.state.withLockedValue { state -> (jobs: [PostgresWriteJob], fanOut: Bool, closing: Bool)? in
                let jobs = (state.suspended && !state.closing) ? [] : state.jobs
                if !jobs.isEmpty || state.fanOutDue || state.closing {
                    if !jobs.isEmpty { state.jobs.removeAll() }
                    defer { state.fanOutDue = false }
                    return (jobs, state.fanOutDue, state.closing)
                }
                return nil
            }
            if let taken { return taken }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = self.state.withLockedValue { state -> Bool in
                    let ready = (!state.jobs.isEmpty && !state.suspended) || state.fanOutDue || state.closing
                    if !ready { state.waiter = continuation }
                    return ready
                }
                if resumeNow { continuation.resume() }
            }
        }
    }

    /// Refuses new jobs and wakes the writer so that it finishes what is queued and stops.
    func close() {
        let waiter = self.state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            state.closing = true
            return state.takeWaiter()
        }
        waiter?.resume()
    }

    /// Whether ``close()`` was called.
    var isClosing: Bool { self.state.withLockedValue { $0.closing } }

    /// Holds jobs in the queue until ``resume()`` (tests).
    func suspend() {
        self.state.withLockedValue { $0.suspended = true }
    }

    /// Lets the writer take jobs again.
    func resume() {
        let waiter = self.state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            state.suspended = false
            return state.takeWaiter()
        }
        waiter?.resume()
    }

    /// Jobs waiting (tests).
    var count: Int { self.state.withLockedValue { $0.jobs.count } }
}

extension PostgresWriteQueue.State {
    fileprivate mutating func takeWaiter() -> CheckedContinuation<Void, Never>? {
        defer { self.waiter = nil }
        return self.waiter
    }
}
