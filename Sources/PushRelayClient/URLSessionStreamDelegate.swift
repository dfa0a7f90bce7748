#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking

/// The session's data delegate, for platforms without `bytes(for:)`: hands each streaming task's head and body
/// chunks to the stream that waits for them. Tasks it was not told about (the acknowledgements, which complete
/// through their completion handlers) are ignored.
final class URLSessionStreamDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// What a streaming task delivers, in order.
    enum Event: Sendable {
        case head(status: Int)
        case chunk([UInt8])
    }

    private struct Stream {
        var continuation: AsyncThrowingStream<Event, any Error>.Continuation
        var activity: StreamActivity
    }

    private let streams = LockedValue([Int: Stream]())

    /// The events of `task`, from its head to its end; call before `task.resume()`.
    func register(_ task: URLSessionTask, activity: StreamActivity) -> AsyncThrowingStream<Event, any Error> {
        let (events, continuation) = AsyncThrowingStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        let id = task.taskIdentifier
        streams.withLockedValue { $0[id] = Stream(continuation: continuation, activity: activity) }
        continuation.onTermination = { [weak self] _ in
            self?.streams.withLockedValue { _ = $0.removeValue(forKey: id) }
        }
        return events
    }

    private func stream(_ task: URLSessionTask) -> Stream? {
        streams.withLockedValue { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        if let stream = stream(dataTask) {
            stream.activity.touch()
            stream.continuation.yield(.head(status: (response as? HTTPURLResponse)?.statusCode ?? 0))
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let stream = stream(dataTask) else { return }
        stream.activity.touch()
        stream.continuation.yield(.chunk(Array(data)))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let stream = streams.withLockedValue({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            stream.continuation.finish(throwing: error)
        } else {
            stream.continuation.finish()
        }
    }
}
#else
import Foundation

/// On platforms with `bytes(for:)` the session needs no data delegate; this one only exists to be the same type.
final class URLSessionStreamDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {}
#endif
