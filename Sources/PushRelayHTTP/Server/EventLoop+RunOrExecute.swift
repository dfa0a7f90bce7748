import NIOCore

extension EventLoop {
    /// Runs `work` at once when called on this event loop, else schedules it there: the hop that event-loop
    /// confined objects (body writers, client streams) take for calls from any thread.
    func runOrExecute(_ work: @escaping @Sendable () -> Void) {
        if inEventLoop {
            work()
        } else {
            execute(work)
        }
    }
}
