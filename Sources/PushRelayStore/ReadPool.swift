import Foundation
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

/// Read-only connections for lookups and queue reads. WAL lets them read while the writer commits. Connections are
/// reused from an idle list, and one is opened when none is idle.
///
/// ``read(_:)`` runs each read on one of the pool's own threads (at most `threads`, started as reads need them) and
/// suspends the caller meanwhile. A read is blocking work — SQLite waits for the disk (a page not in the page cache:
/// milliseconds on a busy disk) and, within its busy timeout, for locks — and on a thread of Swift's cooperative pool
/// (one per core) every such wait would hold up every task of the process: the route handlers, the service
/// lifecycle, the other reads.
final class ReadPool: Sendable {
    private final class Box: @unchecked Sendable {
        let connection: SQLiteConnection
        init(_ connection: SQLiteConnection) { self.connection = connection }
    }

    private struct State: Sendable {
        var idle: [Box] = []
        var closed = false
    }

    private let state = NIOLockedValueBox(State())
    private let threads: ReadThreads
    /// Called on the reading thread before each read, for tests (`@testable`): a stalled disk, without a real one.
    let beforeRead = FunctionSlot<Void, Void>()
    private let path: String
    private let busyTimeout: Duration
    private let maxIdle: Int
    private let mode: SQLiteConnection.OpenMode
    /// For ``SQLiteConnection/OpenMode/immutable``: the database file as it was when the store was opened.
    private let unchanged: UnchangedFile?

    /// A pool of connections to `path`. `mode` ``SQLiteConnection/OpenMode/immutable`` needs `unchanged`: each read
    /// is refused, after it ran, if the file changed since (SQLite reads such a file without locks).
    init(
        path: String, busyTimeout: Duration, maxIdle: Int, threads: Int, mode: SQLiteConnection.OpenMode = .readWrite,
        unchanged: UnchangedFile? = nil
    ) {
        self.path = path
        self.busyTimeout = busyTimeout
        self.maxIdle = max(maxIdle, 1)
        self.mode = mode
        self.unchanged = unchanged
        self.threads = ReadThreads(limit: max(threads, 1))
    }

    /// Runs `body` with a connection of the pool, on the calling thread (one of the pool's).
    private func readOnThisThread<T>(_ body: (SQLiteConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        self.beforeRead.current?(())
        let box = try self.checkOut()
        let result: Result<T, StoreError>
        do {
            result = .success(try body(box.connection))
        } catch {
            if box.connection.inTransaction {
                try? box.connection.execute("ROLLBACK")
            }
            result = .failure(error)
        }
        self.checkIn(box)
        // A file that changed under an unlocked read explains whatever the read found (or failed on).
        try self.unchanged?.verify()
        return try result.get()
    }

    /// Runs `body` with a connection of the pool on one of the pool's threads, and returns its result; the calling
    /// task is suspended meanwhile, its thread free. After ``close()`` it throws ``StoreError/closed``.
    func read<T: Sendable>(
        _ body: @escaping @Sendable (SQLiteConnection) throws(StoreError) -> T
    ) async throws(StoreError) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, StoreError>, Never>) in
            self.read(body) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// ``read(_:)`` without a task: `completion` gets the result on the pool's thread (or at once on the caller's,
    /// ``StoreError/closed``, after ``close()``). It must be quick: hand the result over (to an event loop), do not
    /// wait.
    func read<T>(
        _ body: @escaping @Sendable (SQLiteConnection) throws(StoreError) -> T,
        completion: @escaping @Sendable (Result<T, StoreError>) -> Void
    ) {
        let job: @Sendable () -> Void = { [self] in
            do throws(StoreError) {
                completion(.success(try self.readOnThisThread(body)))
            } catch {
                completion(.failure(error))
            }
        }
        if !self.threads.run(job) {
            completion(.failure(StoreError.closed))
        }
    }

    /// Closes the idle connections and stops the pool's threads once they have run the reads queued for them
    /// (which then throw ``StoreError/closed``); later reads throw ``StoreError/closed``.
    func close() {
        self.threads.close()
        let boxes = self.state.withLockedValue { state in
            state.closed = true
            defer { state.idle.removeAll() }
            return state.idle
        }
        for box in boxes {
            box.connection.close()
        }
    }

    private func checkOut() throws(StoreError) -> Box {
        let taken: Box?? = self.state.withLockedValue { state in
            if state.closed { return .none }
            return .some(state.idle.popLast())
        }
        guard let taken else { throw StoreError.closed }
        if let box = taken {
            return box
        }
        let connection = try SQLiteConnection(path: self.path, busyTimeout: self.busyTimeout, mode: self.mode)
        try connection.execute(SQLiteSchema.connectionPragmas(writer: false))
        return Box(connection)
    }

    private func checkIn(_ box: Box) {
        let keep = self.state.withLockedValue { state in
            guard !state.closed, state.idle.count < self.maxIdle else { return false }
            state.idle.append(box)
            return true
        }
        if !keep {
            box.connection.close()
        }
    }
}

/// The threads of a ``ReadPool``: a queue of reads, and up to `limit` threads that run them, started when a read
/// is queued and no thread waits for one (a pool never read from starts none).
private final class ReadThreads: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [@Sendable () -> Void] = []
    private var next = 0
    private var started = 0
    private var idle = 0
    private var closed = false
    private let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Queues `job` for a thread; false when the pool is closed (the job is not run).
    func run(_ job: @escaping @Sendable () -> Void) -> Bool {
        self.condition.lock()
        guard !self.closed else {
            self.condition.unlock()
            return false
        }
        self.jobs.append(job)
        let queued = self.jobs.count - self.next
        let start = queued > self.idle && self.started < self.limit
        if start { self.started += 1 }
        if self.idle > 0 { self.condition.signal() }
        self.condition.unlock()
        if start {
            let thread = Thread { [self] in self.serve() }
            thread.name = "store-reader"
            thread.start()
        }
        return true
    }

    /// Lets the threads end once the queue is empty; nothing more is queued.
    func close() {
        self.condition.lock()
        self.closed = true
        self.condition.broadcast()
        self.condition.unlock()
    }

    private func serve() {
        #if canImport(Glibc)
        GroupCommitWriter.nameCurrentThread("store-reader")
        #endif
        while let job = self.take() {
            job()
        }
    }

    /// The next job, waiting for one; nil once closed and empty.
    private func take() -> (@Sendable () -> Void)? {
        self.condition.lock()
        defer { self.condition.unlock() }
        while self.next == self.jobs.count {
            if self.closed {
                self.started -= 1
                return nil
            }
            self.idle += 1
            self.condition.wait()
            self.idle -= 1
        }
        let job = self.jobs[self.next]
        self.next += 1
        if self.next == self.jobs.count {
            // Drained: start the array over (its storage kept) instead of letting it grow.
            self.jobs.removeAll(keepingCapacity: true)
            self.next = 0
        }
        return job
    }
}

/// A database file that must not change while it is read as ``SQLiteConnection/OpenMode/immutable`` (SQLite then
/// takes no lock): its identity, size and modification time when the store was opened. Only a checkpoint of a
/// process that opened the store to write since (a daemon started meanwhile) changes the file; what it commits to
/// its write-ahead log first is simply not seen, as if the read had come just before.
struct UnchangedFile: Sendable, Equatable {
    let path: String
    private let device: UInt64
    private let inode: UInt64
    private let size: Int64
    private let modifiedSeconds: Int64
    private let modifiedNanoseconds: Int64

    /// The file at `path` as it is now; nil if it cannot be examined.
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.path = path
        self.device = UInt64(info.st_dev)
        self.inode = UInt64(info.st_ino)
        self.size = Int64(info.st_size)
        self.modifiedSeconds = Int64(info.st_mtim.tv_sec)
        self.modifiedNanoseconds = Int64(info.st_mtim.tv_nsec)
    }

    /// Throws ``StoreError/Code/unavailable`` when the file is not as it was.
    func verify() throws(StoreError) {
        guard UnchangedFile(path: self.path) == self else {
            throw StoreError.unavailable(
                "\(self.path) changed while it was read without its write-ahead log (a process opened the store to "
                    + "write meanwhile): run the command again")
        }
    }
}
