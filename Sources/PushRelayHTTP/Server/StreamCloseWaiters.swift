/// The ``HTTPResponseBodyWriter/onClose(_:)`` callbacks of one response stream (``waitUntilClosed()`` is one of
/// them), shared by the HTTP/1.1 and HTTP/2 body writers.
///
/// Event-loop confined, like the writer that owns it.
struct StreamCloseWaiters {
    private var callbacks: [@Sendable () -> Void] = []

    /// Calls `callback` at once when the stream is `alreadyClosed` (or draining), else keeps it for
    /// ``resumeAll()``.
    mutating func onClose(_ callback: @escaping @Sendable () -> Void, alreadyClosed: Bool) {
        if alreadyClosed {
            callback()
        } else {
            callbacks.append(callback)
        }
    }

    /// Calls every waiting callback once: the stream closed or the server is draining.
    mutating func resumeAll() {
        let waiting = callbacks
        callbacks = []
        for callback in waiting { callback() }
    }
}
