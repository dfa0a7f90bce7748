/// When a stream last showed signs of life, and the watchdog that cancels it when it stays silent.
final class StreamActivity: Sendable {
    private struct State {
        var last = ContinuousClock.now
        var timedOut = false
    }

    private let state = LockedValue(State())

    /// Something arrived (the head, a chunk): the silence starts again.
    func touch() {
        state.withLockedValue { $0.last = .now }
    }

    /// Whether the watchdog gave up on the stream.
    var timedOut: Bool { state.withLockedValue { $0.timedOut } }

    /// Sleeps until the stream has been silent for `idleTimeout`, then marks it timed out and calls `cancel`.
    /// Returns early when the calling task is cancelled (the stream ended first).
    func watch(idleTimeout: Duration, cancel: @Sendable () -> Void) async {
        while !Task.isCancelled {
            let deadline = state.withLockedValue { $0.last } + idleTimeout
            if ContinuousClock.now >= deadline {
                state.withLockedValue { $0.timedOut = true }
                cancel()
                return
            }
            do {
                try await Task.sleep(until: deadline, clock: .continuous)
            } catch {
                return
            }
        }
    }
}
