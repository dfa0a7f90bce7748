public import HTTPTypes
public import NIOCore

/// What a handler answers: a response head and a body that is complete, empty, or written over time.
public struct HTTPServerResponse: Sendable {
    /// How the body is produced.
    public enum Body: Sendable {
        /// No body.
        case empty
        /// A complete body; `content-length` is set by the transport.
        case bytes(ByteBuffer)
        /// A body written over time (an event stream): the closure writes whenever it has data and returns
        /// when the stream should end. It may run for hours. `write` suspends while the peer is not reading
        /// (HTTP/2 flow control, socket back-pressure) and throws once the peer has gone away.
        case stream(@Sendable (any HTTPResponseBodyWriter) async throws -> Void)
        /// A body written over time by a handler that holds no task while it waits: the closure is called once,
        /// on the connection's event loop, right after the response head is submitted, and must return at once.
        /// The handler keeps the writer, writes with ``HTTPResponseBodyWriter/write(_:completion:)`` whenever it
        /// has data, learns of the peer leaving with ``HTTPResponseBodyWriter/onClose(_:)``, and ends the body
        /// with ``HTTPResponseBodyWriter/finish()`` (or ``HTTPResponseBodyWriter/fail()``). For responses that
        /// stay open for hours on many connections (event streams): a parked task per stream is kilobytes.
        /// Not called for a HEAD request.
        case detachedStream(@Sendable (any HTTPResponseBodyWriter) -> Void)
    }

    public var head: HTTPResponse
    public var body: Body

    public init(head: HTTPResponse, body: Body = .empty) {
        self.head = head
        self.body = body
    }

    public init(status: HTTPResponse.Status, headerFields: HTTPFields = [:], body: Body = .empty) {
        self.head = HTTPResponse(status: status, headerFields: headerFields)
        self.body = body
    }
}

/// Writes the body of a streaming response. Backed by an HTTP/2 stream or an HTTP/1.1 chunked response.
public protocol HTTPResponseBodyWriter: Sendable {
    /// Queues `buffer` and calls `completion` once the transport can take more (back-pressure): at once, on the
    /// caller's thread, while under the high watermark; later, on the connection's event loop, when the peer has
    /// read enough. `completion` gets `HTTPTransportError.streamClosed` once the peer has reset the stream or
    /// closed the connection (or the body was ended). Call it again only after `completion` ran.
    func write(_ buffer: ByteBuffer, completion: @escaping @Sendable ((any Error)?) -> Void)
    /// Ends the body once everything written is sent. Further writes fail.
    func finish()
    /// Aborts the response: the HTTP/2 stream is reset, the HTTP/1.1 connection closed (its body is cut short).
    func fail()
    /// Calls `callback` once, on the connection's event loop, when the peer has gone away (stream reset,
    /// connection closed, server draining); at once if it already has. The task-free form of
    /// ``waitUntilClosed()`` for a handler that must notice a disconnect while it waits on something else: it
    /// costs a closure, not a second task per stream. `callback` must not block.
    func onClose(_ callback: @escaping @Sendable () -> Void)
    /// The event loop of the connection: callbacks and completions that run later run there.
    var eventLoop: any EventLoop { get }
    /// Allocates buffers for `write`.
    var allocator: ByteBufferAllocator { get }
}

extension HTTPResponseBodyWriter {
    /// Returns when the peer has gone away (stream reset, connection closed, server draining).
    /// Lets a handler that is idle (waiting for the next event) notice a disconnect.
    public func waitUntilClosed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            onClose { continuation.resume() }
        }
    }

    /// Writes `buffer` and suspends until the transport can take more (back-pressure).
    /// Throws `HTTPTransportError.streamClosed` once the peer has reset the stream or closed the connection.
    public func write(_ buffer: ByteBuffer) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            write(buffer) { error in
                if let error {
                    continuation.resume(throwing: error)
                } else {
                    continuation.resume()
                }
            }
        }
    }
}
