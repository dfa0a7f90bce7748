import Foundation
import NIOConcurrencyHelpers
import PushRelayCore
import Testing
@testable import PushRelayStore

/// A disk that holds every read until it is released: each read of the store's ``ReadPool`` waits in ``stall()``
/// (installed as the pool's `beforeRead`), as a read whose pages are not in the page cache waits for a slow disk.
final class StalledDiskFake: @unchecked Sendable {
    private let condition = NSCondition()
    private var released = false
    private var waitingCount = 0

    /// Waits until ``release()``.
    @Sendable func stall() {
        self.condition.lock()
        self.waitingCount += 1
        self.condition.broadcast()
        while !self.released { self.condition.wait() }
        self.waitingCount -= 1
        self.condition.unlock()
    }

    /// Lets every read go on, and the later ones through.
    func release() {
        self.condition.lock()
        self.released = true
        self.condition.broadcast()
        self.condition.unlock()
    }

    /// Waits (blocking the calling thread) until `count` reads are held, for at most `timeout`; whether they are.
    func waitForHeldReads(_ count: Int, timeout: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        self.condition.lock()
        defer { self.condition.unlock() }
        while self.waitingCount < count {
            if !self.condition.wait(until: deadline) { return self.waitingCount >= count }
        }
        return true
    }
}

@Suite("Store: SQLite reads off the cooperative pool")
struct SQLiteReadThreadTests {
    /// Issue #10: a look-up that misses the caches must not block a thread of Swift's cooperative pool. More reads than
    /// the pool has threads wait for a stalled disk; a task started after them must still run, before any of them
    /// returns. Read on the calling task's thread, as before, they held every thread of the pool, and the task did
    /// not run until the disk came back.
    @Test("reads waiting for the disk leave the cooperative pool free")
    func stalledReadsLeaveThePoolFree() async throws {
        try await withTemporaryDirectory { directory in
            // More reads than the cooperative pool has threads (one per core), and as many reader threads.
            let count = ProcessInfo.processInfo.activeProcessorCount + 2
            var configuration = SQLiteStore.Configuration(directory: directory)
            configuration.maxIdleReadConnections = count
            configuration.readThreads = count
            let store = try SQLiteStore(configuration: configuration)
            let created = try await store.createProject(name: "shop")
            let disk = StalledDiskFake()
            store.readers.beforeRead.set { _ in disk.stall() }
            let returned = NIOLockedValueBox(0)
            let reads = (0..<count).map { index in
                Task.detached {
                    // Unknown keys: each is a miss of the authentication cache, so a read of the database.
                    let project = try await store.authenticateServerKey("\(created.serverKey)-\(index)")
                    returned.withLockedValue { $0 += 1 }
                    return project
                }
            }
            // Watched from a thread of its own: if the reads held the pool, nothing on it would run to watch.
            let (held, probeRan, returnedBeforeProbe) = await withCheckedContinuation {
                (continuation: CheckedContinuation<(Bool, Bool, Int), Never>) in
                Thread {
                    let held = disk.waitForHeldReads(count, timeout: 10)
                    let probe = DispatchSemaphore(value: 0)
                    let returnedBeforeProbe = returned.withLockedValue { $0 }
                    Task.detached { probe.signal() }
                    let probeRan = probe.wait(timeout: .now() + 10) == .success
                    disk.release()
                    continuation.resume(returning: (held, probeRan, returnedBeforeProbe))
                }.start()
            }
            #expect(held, "\(count) reads should all be waiting for the disk at once")
            #expect(returnedBeforeProbe == 0)
            #expect(probeRan, "a task should run on the cooperative pool while \(count) reads wait for the disk")
            for read in reads {
                #expect(try await read.value == nil)
            }
            // The pool serves again once the disk does, and its threads end with the store.
            store.readers.beforeRead.set(nil)
            #expect(try await store.authenticateServerKey(created.serverKey) == created.project)
            await store.close()
            await #expect(throws: StoreError.self) { try await store.authenticateServerKey("\(created.serverKey)-x") }
        }
    }

    /// `readThreads` bounds the reads that wait at once (each thread costs memory): with 2, a third read stalled
    /// behind them waits for a thread, and runs once one is free.
    @Test("readThreads bounds the reads that run at once")
    func readThreadsBoundTheReads() async throws {
        try await withTemporaryDirectory { directory in
            var configuration = SQLiteStore.Configuration(directory: directory)
            configuration.readThreads = 2
            let store = try SQLiteStore(configuration: configuration)
            let created = try await store.createProject(name: "shop")
            let disk = StalledDiskFake()
            store.readers.beforeRead.set { _ in disk.stall() }
            let reads = (0..<3).map { index in
                Task.detached { try await store.authenticateServerKey("\(created.serverKey)-\(index)") }
            }
            let (two, three) = await withCheckedContinuation { (continuation: CheckedContinuation<(Bool, Bool), Never>) in
                Thread {
                    let two = disk.waitForHeldReads(2, timeout: 10)
                    // With the setting ignored (a thread per read) the third is held at once, not after a second.
                    let three = disk.waitForHeldReads(3, timeout: 1)
                    disk.release()
                    continuation.resume(returning: (two, three))
                }.start()
            }
            #expect(two)
            #expect(!three, "a third read should wait for one of the 2 threads")
            for read in reads {
                #expect(try await read.value == nil)
            }
            await store.close()
        }
    }
}
