public import HTTPTypes
public import NIOCore

/// A response received by `HTTP2Client`: the head, and the body as it arrives.
public struct HTTPClientResponse: Sendable {
    /// Status and header fields.
    public var head: HTTPResponse
    /// The body, read incrementally; reading it is what opens the flow-control window for more.
    public var body: HTTPClientResponseBody

    /// A response with `head` and `body`.
    public init(head: HTTPResponse, body: HTTPClientResponseBody) {
        self.head = head
        self.body = body
    }
}

/// The body of an `HTTPClientResponse`: an async sequence of buffers as they arrive from the server.
///
/// The body can be iterated once. Bytes that have arrived and are not yet read count against the stream's
/// HTTP/2 flow-control window, so a consumer that stops reading stops the server from sending (no unbounded
/// buffering in the client). The sequence throws `HTTPTransportError.streamClosed` when the server resets the
/// stream or the connection closes before the body has ended.
public struct HTTPClientResponseBody: AsyncSequence, Sendable {
    public typealias Element = ByteBuffer

    enum Storage: Sendable {
        case complete(ByteBuffer)
        case stream(any HTTPClientBodySource)
    }

    let storage: Storage

    /// A body that is already complete (for tests and fakes).
    public init(_ buffer: ByteBuffer) {
        self.storage = .complete(buffer)
    }

    init(source: any HTTPClientBodySource) {
        self.storage = .stream(source)
    }

    /// Reads the whole body; throws `HTTPError.payloadTooLarge` past `maxBytes`.
    public func collect(upTo maxBytes: Int) async throws -> ByteBuffer {
        var collected = ByteBuffer()
        for try await var chunk in self {
            guard collected.readableBytes + chunk.readableBytes <= maxBytes else { throw HTTPError.payloadTooLarge }
            collected.writeBuffer(&chunk)
        }
        return collected
    }

    /// Iterates the body's buffers.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var complete: ByteBuffer?
        let source: (any HTTPClientBodySource)?

        /// The next buffer, or `nil` at the end of the body.
        public mutating func next() async throws -> ByteBuffer? {
            if let source { return try await source.next() }
            defer { complete = nil }
            if let buffer = complete, buffer.readableBytes > 0 { return buffer }
            return nil
        }
    }

    /// Stops receiving the body: the stream is reset (`RST_STREAM` with `CANCEL`) and the connection stays open
    /// for other requests. A pending or later read throws `HTTPTransportError.streamClosed` unless the body had
    /// already ended. Does nothing for a complete body.
    public func cancel() {
        if case .stream(let source) = storage { source.cancel() }
    }

    /// Starts iterating.
    public func makeAsyncIterator() -> AsyncIterator {
        switch storage {
        case .complete(let buffer): AsyncIterator(complete: buffer, source: nil)
        case .stream(let source): AsyncIterator(complete: nil, source: source)
        }
    }
}

/// Where a streamed response body comes from: a queue on the connection's event loop.
protocol HTTPClientBodySource: Sendable {
    func next() async throws -> ByteBuffer?
    /// Resets the stream.
    func cancel()
}
