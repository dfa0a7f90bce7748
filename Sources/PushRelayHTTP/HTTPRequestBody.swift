public import NIOCore

/// A request body as an async sequence of buffers.
///
/// The transport enforces the route's `maxBodyBytes` while the body streams in: a body past the limit ends
/// the request with `413` before or while the handler reads it, and `collect(upTo:)` throws
/// `HTTPError.payloadTooLarge`.
public struct HTTPRequestBody: AsyncSequence, Sendable {
    public typealias Element = ByteBuffer

    enum Storage: Sendable {
        case complete(ByteBuffer)
        case stream(Source)
    }

    /// A streamed body's sequence, held by reference: `AsyncThrowingStream` is not `@frozen`, and as a payload here
    /// it made this type — and every ``HTTPServerRequest`` — a value of unknown layout, copied and destroyed through
    /// run-time value witnesses on every request (see ``RequestBodyStream``).
    final class Source: Sendable {
        let stream: AsyncThrowingStream<ByteBuffer, any Error>

        init(_ stream: AsyncThrowingStream<ByteBuffer, any Error>) {
            self.stream = stream
        }
    }

    let storage: Storage

    /// A body that has fully arrived.
    public init(_ buffer: ByteBuffer) {
        self.storage = .complete(buffer)
    }

    /// A body that arrives over time.
    public init(stream: AsyncThrowingStream<ByteBuffer, any Error>) {
        self.storage = .stream(Source(stream))
    }

    /// An empty body.
    public static var empty: HTTPRequestBody { HTTPRequestBody(ByteBuffer()) }

    /// Reads the whole body, throwing `HTTPError.payloadTooLarge` past `maxBytes`.
    public func collect(upTo maxBytes: Int) async throws -> ByteBuffer {
        switch storage {
        case .complete(let buffer):
            guard buffer.readableBytes <= maxBytes else { throw HTTPError.payloadTooLarge }
            return buffer
        case .stream(let source):
            var collected = ByteBuffer()
            for try await var chunk in source.stream {
                guard collected.readableBytes + chunk.readableBytes <= maxBytes else { throw HTTPError.payloadTooLarge }
                collected.writeBuffer(&chunk)
            }
            return collected
        }
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var complete: ByteBuffer?
        var streamIterator: AsyncThrowingStream<ByteBuffer, any Error>.AsyncIterator?

        public mutating func next() async throws -> ByteBuffer? {
            if var iterator = streamIterator {
                defer { streamIterator = iterator }
                return try await iterator.next()
            }
            defer { complete = nil }
            if let buffer = complete, buffer.readableBytes > 0 { return buffer }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        switch storage {
        case .complete(let buffer): AsyncIterator(complete: buffer, streamIterator: nil)
        case .stream(let source): AsyncIterator(complete: nil, streamIterator: source.stream.makeAsyncIterator())
        }
    }
}
