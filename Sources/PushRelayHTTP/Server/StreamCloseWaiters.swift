/// The callers of `waitUntilClosed()` on one response stream, shared by the HTTP/1.1 and HTTP/2 body writers.
///
/// Event-loop confined, like the writer that owns it.
struct StreamCloseWaiters {
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Resumes `continuation` at once when the stream is `alreadyClosed` (or draining), else keeps it for
    /// ``resumeAll()``.
    mutating func wait(_ continuation: CheckedContinuation<Void, Never>, alreadyClosed: Bool) {
        if alreadyClosed {
            continuation.resume()
        } else {
            waiters.append(continuation)
        }
    }

    /// Resumes every waiting caller: the stream closed or the server is draining.
    mutating func resumeAll() {
        let waiting = waiters
        waiters = []
        for waiter in waiting { waiter.resume() }
    }
}
