import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PushRelayCore
import Testing
@testable import PushRelayStore

/// ``SQLiteStore/Configuration/commitEventLoop``: the writer's groups, completions and commit observer run on the
/// given event loop, with the same grouping, durability and closing as the writer thread.
@Suite("Store: commits on an event loop")
struct CommitOnEventLoopTests {
    /// Opens a SQLite store in `directory` whose writer runs on a loop of its own, runs `body`, closes both.
    private func withLoopStore<T>(
        in directory: String,
        configure: (inout SQLiteStore.Configuration) -> Void = { _ in },
        _ body: (SQLiteStore, any EventLoop) async throws -> T
    ) async throws -> T {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        var configuration = SQLiteStore.Configuration(directory: directory)
        configuration.commitEventLoop = loop
        configure(&configuration)
        let store: SQLiteStore
        do {
            store = try SQLiteStore(configuration: configuration)
        } catch {
            try await group.shutdownGracefully()
            throw error
        }
        let result: Result<T, any Error>
        do {
            result = .success(try await body(store, loop))
        } catch {
            result = .failure(error)
        }
        await store.close()
        try await group.shutdownGracefully()
        return try result.get()
    }

    @Test("concurrent enqueues share one transaction, committed, completed and observed on the loop")
    func groupOnTheLoop() async throws {
        try await withTemporaryDirectory { directory in
            try await withLoopStore(in: directory) { store, loop in
                let fixture = try await makeFixture(store)
                let observed = NIOLockedValueBox<(rows: Int, offLoop: Int)>((0, 0))
                store.setCommitObserver { rows in
                    let on = loop.inEventLoop
                    observed.withLockedValue { $0.rows += rows.count; $0.offLoop += on ? 0 : 1 }
                }
                let callers = 32
                let before = store.groupCommitStatistics
                store.suspendWriter()
                let completions = NIOLockedValueBox<(done: Int, offLoop: Int, failed: Int)>((0, 0, 0))
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<callers {
                        group.addTask {
                            // The completion form the event-loop send path uses.
                            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                                store.enqueue([NewMessage(device: fixture.device, body: [UInt8(index)])]) { result in
                                    let on = loop.inEventLoop
                                    completions.withLockedValue {
                                        $0.done += 1
                                        $0.offLoop += on ? 0 : 1
                                        if case .failure = result { $0.failed += 1 }
                                    }
                                    continuation.resume(with: result.map { _ in () })
                                }
                            }
                        }
                    }
                    await waitUntilQueued(store, callers)
                    #expect(store.queuedWriteRequests == callers)
                    store.resumeWriter()
                    try await group.waitForAll()
                }
                #expect(completions.withLockedValue { $0 } == (callers, 0, 0))
                #expect(observed.withLockedValue { $0 } == (callers, 0))
                let after = store.groupCommitStatistics
                #expect(after.transactions == before.transactions + 1)
                #expect(after.largestGroup == callers)
                #expect(after.writerCPUMicros > 0, "the loop's time spent writing is counted")
                #expect(try await store.pendingMessages(for: fixture.device, after: nil, limit: 1000).count == callers)
            }
        }
    }

    @Test("writes queued when the store closes are committed first, and are there after a reopen")
    func closeCommitsWhatIsQueued() async throws {
        try await withTemporaryDirectory { directory in
            let device = try await withLoopStore(in: directory) { store, _ in
                let fixture = try await makeFixture(store)
                store.suspendWriter()
                let results = NIOLockedValueBox<[Result<[EnqueueResult], any Error>]>([])
                for index in 0..<3 {
                    store.enqueue([NewMessage(device: fixture.device, body: [UInt8(index)])]) { result in
                        results.withLockedValue { $0.append(result) }
                    }
                }
                #expect(store.queuedWriteRequests == 3)
                await store.close()  // the suspended queue is drained by the close
                let done = results.withLockedValue { $0 }
                #expect(done.count == 3)
                #expect(done.allSatisfy { if case .success = $0 { true } else { false } })
                do {
                    _ = try await store.createProject(name: "late")
                    Issue.record("a write after close succeeded")
                } catch let error as StoreError {
                    #expect(error.code == .closed)
                }
                return fixture.device
            }
            // The writer thread's store (no loop) reads what the loop committed.
            try await withStore(.sqlite, in: directory) { store in
                let bodies = try await store.pendingMessages(for: device, after: nil, limit: 10).map(\.body)
                #expect(bodies == [[0], [1], [2]])
            }
        }
    }

    @Test("topic messages fan out on the loop, one batch per turn, new and left by an earlier run")
    func fanOutOnTheLoop() async throws {
        try await withTemporaryDirectory { directory in
            // An earlier run (the writer thread, automatic fan-out off) leaves a topic message unexpanded.
            let (project, devices) = try await withStore(.sqlite, in: directory, configure: { $0.automaticFanOut = false }) {
                store -> (ProjectID, [DeviceID]) in
                let fixture = try await makeFixture(store)
                var registrations = [fixture.registration]
                for _ in 0..<4 {
                    registrations.append(try await store.registerDevice(project: fixture.project, app: "com.shop", platform: "IOS"))
                }
                let tokens = registrations.map(\.device.token)
                #expect(try await store.subscribe(tokens: tokens, to: "news", project: fixture.project) == tokens.map { _ in .ok })
                _ = try await store.enqueueTopicMessage(
                    NewTopicMessage(project: fixture.project, target: .topic("news"), body: [UInt8](text: "left")))
                return (fixture.project, registrations.map(\.device.id))
            }
            try await withLoopStore(in: directory, configure: { $0.fanOutBatchSize = 2 }) { store, _ in
                _ = try await store.enqueueTopicMessage(
                    NewTopicMessage(project: project, target: .topic("news"), body: [UInt8](text: "new")))
                // Bounded wait for the loop's batches (no timing assertion).
                var complete = false
                for _ in 0..<2_000 where !complete {
                    var all = true
                    for device in devices {
                        let bodies = try await store.pendingMessages(for: device, after: nil, limit: 10).map(\.body)
                        all = all && bodies == [[UInt8](text: "left"), [UInt8](text: "new")]
                    }
                    complete = all
                    if !complete { try await Task.sleep(for: .milliseconds(5)) }
                }
                #expect(complete, "every subscriber got both topic messages")
                #expect(store.groupCommitStatistics.transactions >= 5, "batches of two devices, each its own transaction")
            }
        }
    }
}
