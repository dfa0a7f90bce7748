import NIOCore

/// The writing end of a streamed request body (an ``HTTPHandler/async(_:)`` route's `request.body`), held by
/// reference in the connection handlers' request states.
///
/// `AsyncThrowingStream.Continuation` is not `@frozen` in the Concurrency library, so its layout is unknown to this
/// module: an enum with one as a payload becomes a value of unknown size, and every copy, assignment and destruction
/// of the HTTP/1.1 handler's state and the HTTP/2 stream's phase (several per request, streamed or not) went through
/// run-time value witnesses (≈ 4,300 instructions a send; ``HTTPRequestBody/Source`` does the same for the body's
/// sequence). A class reference keeps the states plain values; only a streamed request allocates this box.
final class RequestBodyStream: Sendable {
    private let continuation: AsyncThrowingStream<ByteBuffer, any Error>.Continuation

    init(_ continuation: AsyncThrowingStream<ByteBuffer, any Error>.Continuation) {
        self.continuation = continuation
    }

    /// Hands the handler the next part of the body.
    func yield(_ buffer: ByteBuffer) {
        self.continuation.yield(buffer)
    }

    /// Ends the body: whole, or with `error`.
    func finish(throwing error: (any Error)? = nil) {
        self.continuation.finish(throwing: error)
    }
}
