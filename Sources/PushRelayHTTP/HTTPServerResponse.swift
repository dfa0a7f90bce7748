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
    /// Writes `buffer` and suspends until the transport can take more (back-pressure).
    /// Throws `HTTPTransportError.streamClosed` once the peer has reset the stream or closed the connection.
    func write(_ buffer: ByteBuffer) async throws
    /// Returns when the peer has gone away (stream reset, connection closed, server draining).
    /// Lets a handler that is idle (waiting for the next event) notice a disconnect.
    func waitUntilClosed() async
    /// Calls `callback` once, on the connection's event loop, when the peer has gone away (stream reset,
    /// connection closed, server draining); at once if it already has. The task-free form of
    /// ``waitUntilClosed()`` for a handler that must notice a disconnect while it waits on something else: it
    /// costs a closure, not a second task per stream. `callback` must not block.
    func onClose(_ callback: @escaping @Sendable () -> Void)
    /// Allocates buffers for `write`.
    var allocator: ByteBufferAllocator { get }
}
