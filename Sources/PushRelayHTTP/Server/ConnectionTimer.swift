import NIOCore

/// One timer per connection for deadlines that move on every request (the idle deadline, a request's deadline).
///
/// Moving the deadline later costs nothing: the scheduled task stays where it is, and when it fires early it
/// re-arms itself for the current deadline. Only an earlier deadline cancels and reschedules. A busy keep-alive
/// connection so pays one clock read per request, not a scheduled task. Confined to the connection's event loop;
/// `cancel()` it when the handler leaves the pipeline (the closure holds the handler).
final class ConnectionTimer {
    /// The moment `onExpiry` runs; `nil`: none.
    private(set) var deadline: NIODeadline?
    private var scheduled: Scheduled<Void>?
    private var scheduledAt = NIODeadline.distantFuture
    private let eventLoop: any EventLoop
    private var onExpiry: (() -> Void)?

    /// A timer on `eventLoop` that runs `onExpiry` once the deadline it is given has passed.
    init(eventLoop: any EventLoop, onExpiry: @escaping () -> Void) {
        self.eventLoop = eventLoop
        self.onExpiry = onExpiry
    }

    /// Sets the deadline (`nil`: none); `onExpiry` runs once it has passed, unless it is moved again before.
    func set(_ deadline: NIODeadline?) {
        self.deadline = deadline
        guard let deadline, deadline < scheduledAt else { return }
        scheduled?.cancel()
        scheduledAt = deadline
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        scheduled = eventLoop.scheduleTask(deadline: deadline) { bound.value.fire() }
    }

    /// Sets the deadline `amount` from now, or none when `amount` is `nil`.
    func set(in amount: TimeAmount?) {
        set(amount.map { .now() + $0 })
    }

    /// Stops the timer for good and releases `onExpiry`.
    func cancel() {
        scheduled?.cancel()
        scheduled = nil
        deadline = nil
        onExpiry = nil
    }

    private func fire() {
        scheduled = nil
        scheduledAt = .distantFuture
        guard let deadline else { return }
        if deadline <= .now() {
            self.deadline = nil
            onExpiry?()
        } else {
            set(deadline)
        }
    }
}
