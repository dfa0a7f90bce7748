import NIOCore

/// The writer of a chunked HTTP/1.1 response body.
///
/// Each `write` goes to the socket at once; it returns while the channel stays writable and otherwise suspends
/// until NIO reports it writable again, so a reader that stops reading holds at most NIO's write-buffer high
/// watermark plus one chunk inside the server.
final class HTTP1StreamBodyWriter: HTTPResponseBodyWriter, @unchecked Sendable {
    let allocator: ByteBufferAllocator
    let eventLoop: any EventLoop
    private let connection: NIOLoopBound<HTTP1ServerConnectionHandler>

    // Event-loop confined.
    private var closed = false
    private var ended = false
    private var draining = false
    private var writeWaiter: (@Sendable ((any Error)?) -> Void)?
    private var closeWaiters = StreamCloseWaiters()

    init(connection: HTTP1ServerConnectionHandler, eventLoop: any EventLoop, allocator: ByteBufferAllocator) {
        self.connection = NIOLoopBound(connection, eventLoop: eventLoop)
        self.eventLoop = eventLoop
        self.allocator = allocator
    }

    func write(_ buffer: ByteBuffer, completion: @escaping @Sendable ((any Error)?) -> Void) {
        eventLoop.runOrExecute { self.enqueue(buffer, completion) }
    }

    private func enqueue(_ buffer: ByteBuffer, _ completion: @escaping @Sendable ((any Error)?) -> Void) {
        guard !closed, !ended else {
            completion(HTTPTransportError.streamClosed())
            return
        }
        if buffer.readableBytes == 0 || connection.value.writeStreamChunk(buffer, from: self) {
            completion(nil)
        } else if closed {
            completion(HTTPTransportError.streamClosed())
        } else {
            writeWaiter = completion
        }
    }

    func onClose(_ callback: @escaping @Sendable () -> Void) {
        eventLoop.execute {
            self.closeWaiters.onClose(callback, alreadyClosed: self.closed || self.draining)
        }
    }

    /// Ends the body (terminating chunk) once what was written is out.
    func finish() {
        eventLoop.execute {
            guard !self.closed, !self.ended else { return }
            self.ended = true
            self.connection.value.finishStream(from: self, failed: false)
        }
    }

    /// Aborts the response by closing the connection.
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
            waiter(nil)
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
            waiter(HTTPTransportError.streamClosed())
        }
        closeWaiters.resumeAll()
    }
}
