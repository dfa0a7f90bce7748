public import NIOCore

/// The answer a `.promised` handler (``HTTPHandler/promised(_:)``) owes: completed once, from any thread, and
/// carried out on its connection's event loop.
///
/// It does for one request what an `EventLoopPromise<HTTPServerResponse>` with one callback would, without the
/// future: no callback list, and no generic class whose creation and release look `Result`'s metadata up at run
/// time (3,600 instructions fewer per delivered send on the message path, `Benchmarks/instructions.sh`).
/// Completed on its event loop, the answer is submitted at once; from another thread, through one `execute`. A
/// second completion is ignored.
public final class HTTPResponsePromise: @unchecked Sendable {
    /// The event loop of the request's connection: the answer is submitted there.
    public let eventLoop: any EventLoop
    /// Taken by the first completion; confined to ``eventLoop``.
    private var answer: ((Result<HTTPServerResponse, any Error>) -> Void)?

    /// A promise whose completion calls `answer` on `eventLoop` (once).
    public init(eventLoop: any EventLoop, answer: @escaping (Result<HTTPServerResponse, any Error>) -> Void) {
        self.eventLoop = eventLoop
        self.answer = answer
    }

    /// Answers with `response`.
    public func succeed(_ response: HTTPServerResponse) {
        complete(.success(response))
    }

    /// Answers as the route answers a handler's error (an `HTTPError` with its status, anything else `500`).
    public func fail(_ error: any Error) {
        complete(.failure(error))
    }

    /// Answers with `result`.
    public func complete(_ result: Result<HTTPServerResponse, any Error>) {
        if eventLoop.inEventLoop {
            finish(result)
        } else {
            eventLoop.execute { self.finish(result) }
        }
    }

    /// Answers with what `body` returns or throws, run in a task (the handler's slow path).
    public func completeWithTask(_ body: @escaping @Sendable () async throws -> HTTPServerResponse) {
        Task {
            do {
                succeed(try await body())
            } catch {
                fail(error)
            }
        }
    }

    private func finish(_ result: Result<HTTPServerResponse, any Error>) {
        guard let answer else { return }
        self.answer = nil
        answer(result)
    }
}
