import HTTPTypes
import NIOCore

/// One request of an `HTTP2Client`: the request body to send, the response head being assembled, and the queue
/// of response body buffers the application reads. State is confined to the connection's event loop.
final class HTTP2ClientStream: HTTPClientBodySource, @unchecked Sendable {
    let eventLoop: any EventLoop
    private let connection: NIOLoopBound<HTTP2ClientConnectionHandler>

    // Event-loop confined.
    var streamID: Int32 = 0
    var requestBody = ByteBuffer()
    var headContinuation: CheckedContinuation<HTTPClientResponse, any Error>?
    var status: Int?
    var fields = HTTPFields()
    private var chunks = CircularBuffer<ByteBuffer>()
    private var ended = false
    private var failure: (any Error)?
    private var bodyWaiter: CheckedContinuation<ByteBuffer?, any Error>?
    /// Received bytes that count against the flow-control windows until the application reads them.
    private(set) var unconsumedBytes = 0
    private var closed = false

    init(connection: NIOLoopBound<HTTP2ClientConnectionHandler>, eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
        self.connection = connection
    }

    func next() async throws -> ByteBuffer? {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ByteBuffer?, any Error>) in
            eventLoop.runOrExecute { self.take(continuation) }
        }
    }

    func cancel() {
        eventLoop.execute { self.connection.value.cancel(self) }
    }

    private func take(_ continuation: CheckedContinuation<ByteBuffer?, any Error>) {
        if let chunk = chunks.popFirst() {
            consumed(chunk.readableBytes)
            continuation.resume(returning: chunk)
        } else if let failure {
            continuation.resume(throwing: failure)
        } else if ended {
            continuation.resume(returning: nil)
        } else {
            precondition(bodyWaiter == nil, "a response body can be iterated only once at a time")
            bodyWaiter = continuation
        }
    }

    private func consumed(_ count: Int) {
        unconsumedBytes -= count
        if !closed { connection.value.consume(streamID: streamID, count: count) }
    }

    // MARK: Called by the connection handler

    /// Response body bytes arrived.
    func received(_ chunk: ByteBuffer) {
        unconsumedBytes += chunk.readableBytes
        if let waiter = bodyWaiter {
            bodyWaiter = nil
            consumed(chunk.readableBytes)
            waiter.resume(returning: chunk)
        } else {
            chunks.append(chunk)
        }
    }

    /// The response body ended.
    func receivedEnd() {
        ended = true
        if let waiter = bodyWaiter {
            bodyWaiter = nil
            waiter.resume(returning: nil)
        }
    }

    /// The stream closed (cleanly when the body had ended, else it failed with `error`).
    func closed(error: any Error) {
        closed = true
        if let head = headContinuation {
            headContinuation = nil
            head.resume(throwing: error)
        }
        if !ended && failure == nil {
            failure = error
            if let waiter = bodyWaiter {
                bodyWaiter = nil
                waiter.resume(throwing: error)
            }
        }
    }
}
