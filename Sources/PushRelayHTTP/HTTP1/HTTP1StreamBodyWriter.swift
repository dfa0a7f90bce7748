import NIOCore

/// The writer of a chunked HTTP/1.1 response body.
///
/// Each `write` goes to the socket at once; it returns while the channel stays writable and otherwise suspends
/// until NIO reports it writable again, so a reader that stops reading holds at most NIO's write-buffer high
/// watermark plus one chunk inside the server.
final class HTTP1StreamBodyWriter: HTTPResponseBodyWriter, @unchecked Sendable {
    let allocator: ByteBufferAllocator
    private let eventLoop: any EventLoop
    private let connection: NIOLoopBound<HTTP1ServerConnectionHandler>

    // Event-loop confined.
    private var closed = false
    private var ended = false
    private var draining = false
    private var writeWaiter: CheckedContinuation<Void, any Error>?
    private var closeWaiters = StreamCloseWaiters()

    init(connection: HTTP1ServerConnectionHandler, eventLoop: any EventLoop, allocator: ByteBufferAllocator) {
        self.connection = NIOLoopBound(connection, eventLoop: eventLoop)
        self.eventLoop = eventLoop
        self.allocator = allocator
    }

    func write(_ buffer: ByteBuffer) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            eventLoop.execute {
                guard !self.closed, !self.ended else {
                    continuation.resume(throwing: HTTPTransportError.streamClosed())
                    return
                }
                if buffer.readableBytes == 0 || self.connection.value.writeStreamChunk(buffer, from: self) {
                    continuation.resume()
                } else if self.closed {
                    continuation.resume(throwing: HTTPTransportError.streamClosed())
                } else {
                    self.writeWaiter = continuation
                }
            }
        }
    }

    func waitUntilClosed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            eventLoop.execute {
                self.closeWaiters.wait(continuation, alreadyClosed: self.closed || self.draining)
            }
        }
    }

    func onClose(_ callback: @escaping @Sendable () -> Void) {
        eventLoop.execute {
            self.closeWaiters.onClose(callback, alreadyClosed: self.closed || self.draining)
        }
    }

    /// Ends the body (terminating chunk); called when the handler's closure returns.
    func finish() {
        eventLoop.execute {
            guard !self.closed, !self.ended else { return }
            self.ended = true
            self.connection.value.finishStream(from: self, failed: false)
        }
    }

    /// Aborts the response by closing the connection; called when the handler's closure throws.
    func fail() {
        eventLoop.execute {
            guard !self.closed, !self.ended else { return }
            self.ended = true
            self.connection.value.finishStream(from: self, failed: true)
        }
    }

    // MARK: Called by the connection handler, on the event loop

    /// The channel is writable again.
    func writable() {
        if let waiter = writeWaiter {
            writeWaiter = nil
            waiter.resume()
        }
    }

    /// The server is draining.
    func drain() {
        draining = true
        closeWaiters.resumeAll()
    }

    /// The connection closed.
    func close() {
        guard !closed else { return }
        closed = true
        if let waiter = writeWaiter {
            writeWaiter = nil
            waiter.resume(throwing: HTTPTransportError.streamClosed())
        }
        closeWaiters.resumeAll()
    }
}
