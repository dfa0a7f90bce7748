#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import HTTPTypes

/// The session's data delegate, for platforms without `bytes(for:)`: hands each streaming task's head and body
/// chunks to the stream that waits for them. Tasks it was not told about (the acknowledgements, which complete
/// through their completion handlers) are ignored.
///
/// FoundationNetworking cannot pause a task, so what the server sends arrives however slowly the stream is read.
/// Each stream holds at most `maximumBufferedBytes` unread (``StreamReceiveBudget``); a chunk that would take it
/// past that cancels the task and ends the stream with ``PushClientError/Code-swift.struct/bufferLimitExceeded``,
/// after the chunks already delivered. No byte is dropped from a stream that goes on.
final class URLSessionStreamDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// What a streaming task delivers, in order.
    enum Event: Sendable {
        case head(TransportResponseHead)
        case chunk([UInt8])
    }

    private struct Stream {
        var continuation: AsyncThrowingStream<Event, any Error>.Continuation
        var activity: StreamActivity
        var budget: StreamReceiveBudget
    }

    private struct State {
        var streams: [Int: Stream] = [:]
        var highWaterMark = 0
    }

    /// The most unread bytes one stream may hold.
    let maximumBufferedBytes: Int
    private let state = LockedValue(State())

    init(maximumBufferedBytes: Int) {
        self.maximumBufferedBytes = maximumBufferedBytes
    }

    /// The most unread bytes any stream of the session held at once (for tests).
    var bufferedBytesHighWaterMark: Int { state.withLockedValue { $0.highWaterMark } }

    /// The events of `task`, from its head to its end; call before `task.resume()`. The reader reports each chunk it
    /// takes with ``consumed(_:of:)``.
    func register(_ task: URLSessionTask, activity: StreamActivity) -> AsyncThrowingStream<Event, any Error> {
        // Unbounded in count only: the bytes are bounded by the stream's budget.
        let (events, continuation) = AsyncThrowingStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        let id = task.taskIdentifier
        let stream = Stream(continuation: continuation, activity: activity,
                            budget: StreamReceiveBudget(limit: maximumBufferedBytes))
        state.withLockedValue { $0.streams[id] = stream }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLockedValue { _ = $0.streams.removeValue(forKey: id) }
        }
        return events
    }

    /// The reader of task `taskIdentifier` took a chunk of `count` bytes.
    func consumed(_ count: Int, of taskIdentifier: Int) {
        state.withLockedValue { $0.streams[taskIdentifier]?.budget.consumed(count) }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        if let stream = state.withLockedValue({ $0.streams[dataTask.taskIdentifier] }) {
            stream.activity.touch()
            let head = (response as? HTTPURLResponse).map {
                TransportResponseHead(status: $0.statusCode, headerFields: URLSessionTransport.fields($0))
            }
            stream.continuation.yield(.head(head ?? TransportResponseHead(status: 0, headerFields: [:])))
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let id = dataTask.taskIdentifier
        // The session's delegate queue is serial: chunks are counted and yielded in the order they arrived.
        let decision = state.withLockedValue { state -> (Stream, StreamReceiveBudget.Action)? in
            guard var stream = state.streams[id] else { return nil }
            let action = stream.budget.received(data.count)
            switch action {
            case .deliver:
                state.streams[id] = stream
                state.highWaterMark = max(state.highWaterMark, stream.budget.buffered)
            case .overflow, .ignore:
                state.streams[id] = nil
            }
            return (stream, action)
        }
        guard let decision else { return }
        let (stream, action) = decision
        switch action {
        case .deliver:
            stream.activity.touch()
            stream.continuation.yield(.chunk(Array(data)))
        case .overflow:
            dataTask.cancel()
            stream.continuation.finish(throwing: PushClientError(
                code: .bufferLimitExceeded,
                message: "stream: more than \(stream.budget.limit) bytes arrived unread; closed to reconnect"))
        case .ignore:
            break
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let id = task.taskIdentifier
        guard let stream = state.withLockedValue({ $0.streams.removeValue(forKey: id) }) else { return }
        if let error {
            stream.continuation.finish(throwing: error)
        } else {
            stream.continuation.finish()
        }
    }
}
#else
import Foundation

/// On platforms with `bytes(for:)` the session needs no data delegate (`bytes(for:)` reads with back-pressure);
/// this one only exists to be the same type.
final class URLSessionStreamDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    init(maximumBufferedBytes: Int) {}
}
#endif
