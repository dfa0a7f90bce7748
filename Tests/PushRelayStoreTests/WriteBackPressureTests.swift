import Foundation
import NIOConcurrencyHelpers
import PushRelayCore
import Testing
@testable import PushRelayStore

@Suite("Store: bounded write queue, group gathering, memory-only look-ups")
struct WriteBackPressureTests {
    @Test("a full write queue refuses at once with unavailable; the waiting writes commit, the refused one is not stored")
    func fullQueueRefusesAtOnce() async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(.sqlite, in: directory, configure: { $0.maxPendingWrites = 4 }) { store in
                let fixture = try await makeFixture(store)
                store.suspendWriter()
                let results = NIOLockedValueBox<[Int: Result<[EnqueueResult], any Error>]>([:])
                for index in 0..<5 {
                    store.enqueue([NewMessage(device: fixture.device, body: [UInt8(index)])]) { result in
                        results.withLockedValue { $0[index] = result }
                    }
                }
                // The fifth was answered on the caller's thread, before the writer ran.
                let refused = try #require(results.withLockedValue { $0[4] })
                #expect(throws: StoreError.self) { _ = try refused.get() }
                if case .failure(let error as StoreError) = refused { #expect(error.code == .unavailable) }
                #expect(results.withLockedValue { $0.count } == 1)
                #expect(store.queuedWriteRequests == 4)
                store.resumeWriter()
                var spins = 0
                while store.queuedWriteRequests > 0 && spins < 1_000_000 {
                    await Task.yield()
                    spins += 1
                }
                // A later write commits in a later group: once it returns, the four have committed and answered.
                _ = try await store.enqueue([NewMessage(device: fixture.device, body: [9])])
                #expect(results.withLockedValue { $0.values.filter { (try? $0.get()) != nil }.count } == 4)
                let bodies = try await store.pendingMessages(for: fixture.device, after: nil, limit: 100).map(\.body)
                #expect(bodies == [[0], [1], [2], [3], [9]])
            }
        }
    }

    @Test("the writer gathers up to its target before it commits, and no longer than the gather timeout")
    func gatherWaitsForTheCountNotTheClock() async throws {
        let queue = WriteQueue(capacity: 16)
        func request() -> WriteRequest { WriteRequest(isolated: false, perform: { _ in {} }, fail: { _ in }) }
        #expect(queue.submit(request()) == .accepted)
        // A gather timeout far longer than any test: only the count can end this wait.
        let taken = await takeOnThread(queue, gather: 3, gatherTimeout: .seconds(600)) {
            #expect(queue.submit(request()) == .accepted)
            #expect(queue.submit(request()) == .accepted)
        }
        #expect(taken == 3)
        // Fewer than asked and a short timeout: it commits what it has.
        #expect(queue.submit(request()) == .accepted)
        let alone = await takeOnThread(queue, gather: 50, gatherTimeout: .milliseconds(1)) {}
        #expect(alone == 1)
        queue.close()
        #expect(queue.submit(request()) == .closed)
    }

    /// `maxGroupGather` (``GroupGather/maxWait``) through the queue's real wait, after a group of 3 whose commit
    /// took long: a maximum of zero takes a lone request at once, the two that come a second later go to the next
    /// group; a long maximum waits until the target's 3 are in.
    @Test("maxGroupGather: zero commits a lone request at once, a long maximum waits for the recent groups' size")
    func maxGroupGatherBoundsTheWait() async throws {
        let queue = WriteQueue(capacity: 16)
        func request() -> WriteRequest { WriteRequest(isolated: false, perform: { _ in {} }, fail: { _ in }) }
        func gather(maxWait: Duration) -> WriteQueue.Gather {
            var gather = GroupGather(maxWait: maxWait)
            gather.committed(groupSize: 3, commitTime: .seconds(600))
            return gather.wait
        }
        let none = gather(maxWait: .zero)
        #expect(queue.submit(request()) == .accepted)
        let alone = await takeOnThread(queue, gather: none.count, gatherTimeout: none.timeout) {
            Thread.sleep(forTimeInterval: 1)
            #expect(queue.submit(request()) == .accepted)
            #expect(queue.submit(request()) == .accepted)
        }
        #expect(alone == 1)
        #expect(queue.count == 2)
        _ = queue.takeAll(wait: false)
        let long = gather(maxWait: .seconds(600))
        #expect(queue.submit(request()) == .accepted)
        let together = await takeOnThread(queue, gather: long.count, gatherTimeout: long.timeout) {
            #expect(queue.submit(request()) == .accepted)
            #expect(queue.submit(request()) == .accepted)
        }
        #expect(together == 3)
        queue.close()
    }

    @Test("the hot path's look-ups answer from memory only, and forget what a deletion invalidates")
    func memoryOnlyLookups() async throws {
        try await withTemporaryDirectory { directory in
            // The cache answers only within `authRecheckInterval` of an epoch check: an hour, so that the look-ups
            // from memory do not depend on how fast a loaded host runs the test.
            try await withStore(.sqlite, in: directory, configure: { $0.authRecheckInterval = .seconds(3600) }) { store in
                let fixture = try await makeFixture(store)
                let key = fixture.credentials.serverKey
                let token = fixture.registration.device.token
                #expect(store.cachedDevices(tokens: [token]) == nil)
                #expect(try await store.authenticateServerKey(key)?.id == fixture.project)
                #expect(try await store.resolveTokens([token]).first??.id == fixture.device)
                #expect(store.cachedProject(serverKey: key)?.id == fixture.project)
                #expect(store.cachedDevices(tokens: [token])?.map(\.id) == [fixture.device])
                #expect(store.cachedDevices(tokens: [token, "unknown-token"]) == nil)
                #expect(store.cachedProject(serverKey: "not-a-key") == nil)
                #expect(try await store.deleteProject(named: fixture.credentials.project.name))
                #expect(store.cachedProject(serverKey: key) == nil)
                #expect(store.cachedDevices(tokens: [token]) == nil)
            }
        }
    }

    /// Runs `takeAll` on a thread of its own (it blocks), runs `meanwhile`, returns how many it took.
    private func takeOnThread(
        _ queue: WriteQueue,
        gather: Int,
        gatherTimeout: Duration,
        meanwhile: () -> Void
    ) async -> Int {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            let thread = Thread {
                let gather = WriteQueue.Gather(count: gather, timeout: gatherTimeout)
                continuation.resume(returning: queue.takeAll(wait: true, gather: gather).requests.count)
            }
            thread.start()
            meanwhile()
        }
    }
}
