import Foundation
import HTTPTypes
import NIOCore
import NIOPosix
import Testing

@testable import PushRelayHTTP

/// The one-shot answer of a `.promised` handler.
@Suite struct HTTPResponsePromiseTests {
    /// What the answer function saw: each result, and whether it ran on the promise's event loop.
    final class Answers: @unchecked Sendable {
        private let lock = NSLock()
        private var seen: [(status: Int?, onLoop: Bool)] = []
        private let done: CheckedContinuation<Void, Never>?

        init(done: CheckedContinuation<Void, Never>? = nil) { self.done = done }

        func record(_ result: Result<HTTPServerResponse, any Error>, onLoop: Bool) {
            lock.withLock { seen.append(((try? result.get()).map { $0.head.status.code }, onLoop)) }
            done?.resume()
        }

        var all: [(status: Int?, onLoop: Bool)] { lock.withLock { seen } }
    }

    @Test("completed on its event loop: answered at once, once; later completions are ignored")
    func onTheLoop() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let answers = Answers()
        try await loop.submit {
            let promise = HTTPResponsePromise(eventLoop: loop) { answers.record($0, onLoop: loop.inEventLoop) }
            promise.succeed(HTTPServerResponse(status: .created))
            let atOnce = answers.all.count  // answered in this tick, not a later one
            #expect(atOnce == 1)
            promise.fail(HTTPError(.conflict, "late"))
            promise.succeed(HTTPServerResponse(status: .ok))
        }.get()
        try await loop.submit {}.get()  // anything a completion scheduled has run
        #expect(answers.all.map(\.status) == [201])
        #expect(answers.all.allSatisfy { $0.onLoop })
    }

    @Test("completed from another thread, or failed: the answer runs on the promise's event loop")
    func fromAnotherThread() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        var answers: Answers?
        await withCheckedContinuation { done in
            let recorder = Answers(done: done)
            answers = recorder
            let promise = HTTPResponsePromise(eventLoop: loop) { recorder.record($0, onLoop: loop.inEventLoop) }
            Thread.detachNewThread { promise.fail(HTTPError(.badRequest, "nope")) }
        }
        let seen = try #require(answers).all
        #expect(seen.count == 1 && seen[0].status == nil && seen[0].onLoop)
    }

    @Test("completeWithTask answers with what the task returns or throws")
    func withTask() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        for fails in [false, true] {
            var answers: Answers?
            await withCheckedContinuation { done in
                let recorder = Answers(done: done)
                answers = recorder
                let promise = HTTPResponsePromise(eventLoop: loop) { recorder.record($0, onLoop: loop.inEventLoop) }
                promise.completeWithTask {
                    if fails { throw HTTPError(.badRequest, "nope") }
                    return HTTPServerResponse(status: .accepted)
                }
            }
            let seen = try #require(answers).all
            #expect(seen.map(\.status) == [fails ? nil : 202] && seen[0].onLoop)
        }
    }
}
