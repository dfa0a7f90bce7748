import NIOCore

/// The writer of a streaming HTTP/2 response body.
///
/// Its state is confined to the connection's event loop. `write` queues bytes here; nghttp2 takes them through the
/// data provider only when the peer's flow-control window is open and the socket is writable, so the queue stays
/// at most `highWatermark` plus one write: `write` suspends past it until nghttp2 has drained it.
final class HTTP2StreamBodyWriter: HTTPResponseBodyWriter, @unchecked Sendable {
    let allocator: ByteBufferAllocator
    let streamID: Int32
    let eventLoop: any EventLoop
    private let connection: NIOLoopBound<HTTP2ServerConnectionHandler>
    private let highWatermark: Int

    // Event-loop confined.
    private var pending = ByteBuffer()
    private var ended = false
    private var closed = false
    private var draining = false
    private var writeWaiter: (@Sendable ((any Error)?) -> Void)?
    private var closeWaiters = StreamCloseWaiters()

    init(
        streamID: Int32,
        connection: HTTP2ServerConnectionHandler,
        eventLoop: any EventLoop,
        allocator: ByteBufferAllocator,
        highWatermark: Int
    ) {
        self.streamID = streamID
        self.connection = NIOLoopBound(connection, eventLoop: eventLoop)
        self.eventLoop = eventLoop
        self.allocator = allocator
        self.highWatermark = highWatermark
    }

    /// Bytes queued here and not yet taken by nghttp2 (the test hook for bounded buffering).
    var bufferedBytes: Int { pending.readableBytes }

    func write(_ buffer: ByteBuffer, completion: @escaping @Sendable ((any Error)?) -> Void) {
        eventLoop.runOrExecute { self.enqueue(buffer, completion) }
    }

    func onClose(_ callback: @escaping @Sendable () -> Void) {
        eventLoop.execute {
            self.closeWaiters.onClose(callback, alreadyClosed: self.closed || self.draining)
        }
    }

    /// Ends the body once everything queued is sent.
    func finish() {
        eventLoop.execute {
            guard !self.closed, !self.ended else { return }
            self.ended = true
            self.connection.value.streamHasOutput(self.streamID)
        }
    }

    /// Resets the stream.
    func fail() {
        eventLoop.execute {
            guard !self.closed else { return }
            self.ended = true
            self.connection.value.resetStream(self.streamID)
        }
    }

    private func enqueue(_ buffer: ByteBuffer, _ completion: @escaping @Sendable ((any Error)?) -> Void) {
        guard !closed, !ended else {
            completion(HTTPTransportError.streamClosed())
            return
        }
        var buffer = buffer
        pending.writeBuffer(&buffer)
        connection.value.streamHasOutput(streamID)
        if pending.readableBytes <= highWatermark || closed {
            completion(closed ? HTTPTransportError.streamClosed() : nil)
        } else {
            writeWaiter = completion
        }
    }

    // MARK: Called by the connection handler, on the event loop

    /// Hands nghttp2 up to `maxLength` bytes.
    func read(maxLength: Int) -> NGHTTP2BodyChunk {
        if pending.readableBytes == 0 {
            pending.clear()
            return ended ? .bytes(ByteBuffer(), endStream: true) : .deferred
        }
        let chunk = pending.readSlice(length: min(maxLength, pending.readableBytes))!
        if pending.readableBytes <= highWatermark / 2, let waiter = writeWaiter {
            writeWaiter = nil
            waiter(nil)
        }
        return .bytes(chunk, endStream: ended && pending.readableBytes == 0)
    }

    /// The server is draining: idle handlers waiting in `waitUntilClosed` should end their streams.
    func drain() {
        draining = true
        closeWaiters.resumeAll()
    }

    /// The stream is gone (reset, finished, or connection closed).
    func close() {
        guard !closed else { return }
        closed = true
        pending = ByteBuffer()
        if let waiter = writeWaiter {
            writeWaiter = nil
            waiter(HTTPTransportError.streamClosed())
        }
        closeWaiters.resumeAll()
    }
}
