import PushRelayCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The single writer of the database: a dedicated thread (never the cooperative pool) that takes every pending write
/// request, runs them in ONE transaction, commits (one fsync), hands the commit observer the rows appended to device
/// queues, then resumes every caller. Between groups it expands topic messages, one bounded batch per transaction.
///
/// With ``SQLiteStore/Configuration/commitEventLoop`` there is no such thread: the groups run on that event loop, a
/// group being what is pending when the loop comes to it (the requests that arrived while it served its connections
/// and committed the last group), and every completion and delivery of the loop's own connections happens without
/// a wake-up of another thread. The loop blocks for each commit's fsync meanwhile (see that setting).
final class GroupCommitWriter: @unchecked Sendable {
    private enum ExitState {
        case running
        case waiting(CheckedContinuation<Void, Never>)
        case exited
    }

    let queue: WriteQueue
    private let context: StoreContext
    // Touched only by the writer thread once it runs.
    private let connection: SQLiteConnection
    private var persistedLastID: Int64
    private var topicMessages: [Int64]
    private var fanOutBackoffUntil: ContinuousClock.Instant?
    private let queueStates = QueueStateCache(maxEntries: 100_000)
    /// Recent groups' sizes and the last commit's duration: how long the next group waits for more requests.
    private var gather: GroupGather
    /// Checkpoints of the WAL: by a thread of their own, the writer finishing the last few frames.
    private let checkpoints: WALCheckpoints

    private let statistics = NIOLockedValueBox(GroupCommitStatistics())
    /// The observers live in slots (``FunctionSlot``), not in a generic box of a function: perf showed chains of
    /// re-abstraction thunks on the commit path.
    private let observer = FunctionSlot<[StoredMessage], Void>()
    private let dropObserver = FunctionSlot<DroppedMessages, Void>()
    /// Whether the last group could commit.
    private let health: CommitHealth
    /// The store's files still under their names (the writer thread's).
    private var files: StoreFileWatch
    private let exit = NIOLockedValueBox(ExitState.running)
    /// Set for a store opened read-only (``SQLiteStore/Configuration/readOnly``): every write is answered this at
    /// once, and the thread is never started.
    private let refusal: StoreError?
    /// The event loop the groups run on instead of the thread (``SQLiteStore/Configuration/commitEventLoop``).
    private let loop: (any EventLoop)?
    /// On `loop`: the writer closed (its connection too); nothing runs any more.
    private var loopExited = false
    /// On `loop`: a fan-out batch is scheduled (at once, or after its back-off).
    private var loopFanOutScheduled = false
    /// On `loop`: the loop thread's CPU time spent writing, summed (microseconds).
    private var loopCPUMicros: Int64 = 0

    /// A writer on `connection`. With `refusal`, a writer that writes nothing: do not ``start()`` it.
    init(
        connection: SQLiteConnection, context: StoreContext, persistedLastID: Int64, topicMessages: [Int64],
        refusal: StoreError? = nil
    ) {
        self.refusal = refusal
        self.loop = context.configuration.commitEventLoop
        self.connection = connection
        self.context = context
        self.persistedLastID = persistedLastID
        self.topicMessages = topicMessages
        self.health = CommitHealth(logger: context.logger)
        self.files = StoreFileWatch(databasePath: context.configuration.path)
        self.queue = WriteQueue(capacity: context.configuration.maxPendingWrites)
        self.gather = GroupGather(maxWait: context.configuration.maxGroupGather)
        self.checkpoints = WALCheckpoints(
            connection: connection, path: context.configuration.path,
            busyTimeout: context.configuration.busyTimeout, logger: context.logger)
    }

    /// Starts the writer thread, or with ``SQLiteStore/Configuration/commitEventLoop`` has the queue call that loop.
    func start() {
        self.checkpoints.start()
        if let loop = self.loop {
            self.queue.setWake { [self] in loop.execute { self.runOnLoop() } }
            if !self.topicMessages.isEmpty {
                // Topic messages a previous run left unfinished; otherwise the first request calls the loop.
                loop.execute { self.runOnLoop() }
            }
            return
        }
        let thread = Thread { [self] in
            // Set from the thread itself: on Linux, `Thread.name` set before `start()` does not reach the kernel,
            // and the writer showed in top and perf under the name of the pool thread that created it.
            #if canImport(Glibc)
            Self.nameCurrentThread("store-writer")
            #endif
            self.run()
        }
        thread.name = "store-writer"
        thread.start()
    }

    #if canImport(Glibc)
    /// Names the calling thread for the kernel (`/proc/thread-self/comm`, at most 15 bytes), as `pthread_setname_np`
    /// would; Glibc's module does not export that one.
    static func nameCurrentThread(_ name: String) {
        let fd = Glibc.open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        defer { Glibc.close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }
    #endif

    /// Runs `body` in the next group transaction and returns its result once committed.
    /// `isolated` puts the request in its own savepoint (see ``WriteRequest/isolated``).
    func write<T: Sendable>(
        isolated: Bool = false,
        _ body: @escaping @Sendable (WriteTransaction) throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            self.submit(isolated: isolated, body) { continuation.resume(with: $0) }
        }
    }

    /// Runs `body` in the next group transaction and calls `completion` with its result once committed (or with
    /// the error that failed it), on the writer thread; at once, on the caller's thread, when the store is
    /// closing. The task-free form of ``write(isolated:_:)`` for the event-loop send path: `completion` must be
    /// quick (hand the result over, do not wait).
    func submit<T: Sendable>(
        isolated: Bool = false,
        _ body: @escaping @Sendable (WriteTransaction) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        if let refusal {
            completion(.failure(refusal))
            return
        }
        let request = WriteRequest(
            isolated: isolated,
            perform: { transaction in
                let value = try body(transaction)
                return { completion(.success(value)) }
            },
            fail: { completion(.failure($0)) }
        )
        switch self.queue.submit(request) {
        case .accepted:
            break
        case .full:
            completion(.failure(StoreError.unavailable("\(self.queue.capacity) writes are waiting for the disk")))
        case .closed:
            completion(.failure(StoreError.closed))
        }
    }

    /// See ``PushStore/commitFailure``.
    var commitFailure: StoreError? { self.health.current }

    /// Sets the drop observer.
    func setDropObserver(_ observer: (@Sendable (DroppedMessages) -> Void)?) {
        self.dropObserver.set(observer)
    }

    /// Sets the commit observer.
    func setObserver(_ observer: (@Sendable ([StoredMessage]) -> Void)?) {
        self.observer.set(observer)
    }

    /// The counters.
    var currentStatistics: GroupCommitStatistics {
        self.statistics.withLockedValue { $0 }
    }

    /// Finishes queued writes, stops the thread and closes the connection.
    func close() async {
        self.queue.close()
        // A refusing writer has no thread to wait for.
        if self.refusal != nil { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = self.exit.withLockedValue { state -> Bool in
                switch state {
                case .exited: return true
                case .running:
                    state = .waiting(continuation)
                    return false
                case .waiting: preconditionFailure("close() called twice concurrently")
                }
            }
            if resumeNow {
                continuation.resume()
            }
        }
    }

    // MARK: The thread

    private func run() {
        while true {
            let fanOutReady = self.context.configuration.automaticFanOut && self.fanOutReady
            let (requests, closing) = self.queue.takeAll(
                wait: !fanOutReady, gather: self.gather.wait)
            if !requests.isEmpty {
                self.runGroup(requests)
            } else if closing {
                break
            }
            if self.context.configuration.automaticFanOut && self.fanOutReady {
                self.runFanOutBatch()
            }
            self.recordStatistics(writerCPUMicros: Self.threadCPUMicros())
        }
        self.exitWriter()
    }

    /// The writer's turn on its event loop (``loop``): the group of every pending request, then one fan-out batch
    /// when one waits (the next one scheduled as a task of its own, so that the loop serves its connections between
    /// batches); once the queue is closed and empty, the writer ends.
    private func runOnLoop() {
        guard !self.loopExited, let loop = self.loop else { return }
        let cpuBefore = Self.threadCPUMicros()
        let (requests, closing) = self.queue.takeAll(wait: false)
        if !requests.isEmpty {
            self.runGroup(requests)
        }
        if !closing, self.context.configuration.automaticFanOut, self.fanOutReady {
            self.runFanOutBatch()
        }
        self.loopCPUMicros += Self.threadCPUMicros() - cpuBefore
        self.recordStatistics(writerCPUMicros: self.loopCPUMicros)
        if closing {
            // Nothing can join the queue once it is closed, and this turn took what was in it.
            self.loopExited = true
            self.exitWriter()
            return
        }
        guard self.context.configuration.automaticFanOut, !self.topicMessages.isEmpty, !self.loopFanOutScheduled
        else { return }
        self.loopFanOutScheduled = true
        let fanOut: @Sendable () -> Void = { [self] in
            self.loopFanOutScheduled = false
            self.runOnLoop()
        }
        if let until = self.fanOutBackoffUntil, ContinuousClock.now < until {
            let wait = ContinuousClock.now.duration(to: until)
            loop.scheduleTask(in: .nanoseconds(StoreContext.micros(wait) * 1000 + 1000), fanOut)
        } else {
            loop.execute(fanOut)
        }
    }

    /// Publishes the counters after a turn: the writer's CPU time and the checkpoints'.
    private func recordStatistics(writerCPUMicros: Int64) {
        let checkpoints = self.checkpoints
        self.statistics.withLockedValue {
            $0.writerCPUMicros = writerCPUMicros
            checkpoints.record(into: &$0)
        }
    }

    /// Closes the checkpointer and the connection, then lets ``close()`` return.
    private func exitWriter() {
        self.checkpoints.close()
        self.connection.close()
        let waiter = self.exit.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            defer { state = .exited }
            if case .waiting(let continuation) = state { return continuation }
            return nil
        }
        waiter?.resume()
    }

    private static func threadCPUMicros() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Int64(time.tv_sec) * 1_000_000 + Int64(time.tv_nsec) / 1000
    }

    private var fanOutReady: Bool {
        guard !self.topicMessages.isEmpty else { return false }
        if let until = self.fanOutBackoffUntil, ContinuousClock.now < until {
            return false
        }
        return true
    }

    /// Expands one batch of the oldest unfinished topic message in its own transaction.
    private func runFanOutBatch() {
        guard let id = self.topicMessages.first else { return }
        let batchSize = self.context.configuration.fanOutBatchSize
        let request = WriteRequest(
            isolated: false,
            perform: { transaction in
                _ = try transaction.expandTopicMessage(id: id, batchSize: batchSize)
                return {}
            },
            fail: { [self] error in
                self.context.logger.error(
                    "topic fan-out batch failed; retrying in 1 s",
                    metadata: ["relay.topic_message.id": "\(id)", "relay.error": "\(error)"]
                )
                self.fanOutBackoffUntil = ContinuousClock.now + .seconds(1)
            }
        )
        self.runGroup([request])
    }

    /// Runs one step of the fan-out on demand (tests, with automatic fan-out off). Returns false when nothing is
    /// left to expand.
    func expandOneBatch() async throws -> Bool {
        let batchSize = self.context.configuration.fanOutBatchSize
        return try await self.write { transaction in
            guard let id = try transaction.pendingTopicMessageIDs().first else { return false }
            _ = try transaction.expandTopicMessage(id: id, batchSize: batchSize)
            return true
        }
    }

    /// The store's files were removed or replaced (``StoreFileWatch``): nothing is committed any more — it would
    /// reach no file that survives a crash — and the first time, what was committed is checkpointed into the
    /// database file when that is still the one open (the WAL alone was removed), so that a crash loses nothing
    /// that was answered.
    private func refuse(_ requests: [WriteRequest], filesGone problem: StoreError) {
        if self.health.current != problem {
            self.context.logger.critical(
                "the store's files were removed or replaced under the daemon; writes fail until it restarts",
                metadata: ["relay.error": "\(problem)"])
            if self.files.databaseIntact {
                do {
                    try self.connection.execute("PRAGMA wal_checkpoint(FULL)")
                } catch {
                    self.context.logger.critical(
                        "could not copy the committed messages into the database file",
                        metadata: ["relay.error": "\(error)"])
                }
            }
        }
        self.health.failed(problem)
        for request in requests { request.complete(problem) }
    }

    private func runGroup(_ requests: [WriteRequest]) {
        if let problem = self.files.problem() {
            self.refuse(requests, filesGone: problem)
            return
        }
        let transaction = WriteTransaction(
            connection: self.connection, context: self.context, queues: self.queueStates
        )
        // The failures of isolated requests (rolled back to their savepoint) in a group that commits, by index: a
        // dictionary, empty unless one fails (an array of optional errors per group looked its storage class up
        // at run time).
        var failures: [Int: any Error] = [:]
        var commitTime = Duration.zero
        do {
            try self.connection.statement("BEGIN IMMEDIATE").run()
            try self.queueStates.checkDataVersion(self.connection)
            for (index, request) in requests.enumerated() {
                if request.isolated {
                    try self.connection.statement("SAVEPOINT request").run()
                    do {
                        try request.perform(transaction)
                        try self.connection.statement("RELEASE request").run()
                    } catch {
                        try self.connection.statement("ROLLBACK TO request").run()
                        try self.connection.statement("RELEASE request").run()
                        transaction.discardQueueStates()
                        failures[index] = error
                    }
                } else {
                    try request.perform(transaction)
                }
            }
            self.persistedLastID = try transaction.finish(persistedLastID: self.persistedLastID)
            let commitStart = ContinuousClock.now
            try self.connection.statement("COMMIT").run()
            commitTime = ContinuousClock.now - commitStart
            self.gather.committed(groupSize: requests.count, commitTime: commitTime)
        } catch {
            if self.connection.inTransaction {
                try? self.connection.execute("ROLLBACK")
            }
            self.queueStates.removeAll()
            self.persistedLastID = self.readPersistedLastID() ?? self.persistedLastID
            if requests.count == 1 {
                self.health.failed(error)
                requests[0].complete(error)
            } else {
                self.statistics.withLockedValue { $0.groupFailures += 1 }
                for request in requests {
                    self.runGroup([request])
                }
            }
            return
        }
        self.afterCommit(transaction, requestCount: requests.count, commitTime: commitTime)
        if let failure = failures.values.lazy.compactMap(CommitHealth.engineFailure).first {
            self.health.failed(failure)
        } else {
            self.health.committed(provingCapacity: transaction.provesCapacity)
        }
        for (index, request) in requests.enumerated() {
            request.complete(failures[index])
        }
        self.checkpoints.committed()
    }

    private func afterCommit(_ transaction: WriteTransaction, requestCount: Int, commitTime: Duration) {
        self.statistics.withLockedValue {
            $0.transactions += 1
            $0.commitMicros += StoreContext.micros(commitTime)
            $0.requests += requestCount
            $0.largestGroup = max($0.largestGroup, requestCount)
        }
        if transaction.authChanged {
            self.context.authCache.invalidate(epoch: transaction.newAuthEpoch)
        } else if !transaction.evictedDevices.isEmpty {
            self.context.authCache.evict(devices: transaction.evictedDevices, epoch: transaction.newAuthEpoch)
        }
        if !transaction.finishedTopicMessages.isEmpty {
            let finished = Set(transaction.finishedTopicMessages)
            self.topicMessages.removeAll { finished.contains($0) }
        }
        self.topicMessages.append(contentsOf: transaction.newTopicMessages)
        if !transaction.newTopicMessages.isEmpty {
            self.fanOutBackoffUntil = nil
        }
        if !transaction.appendedMessages.isEmpty, let observer = self.observer.current {
            observer(transaction.appendedMessages)
        }
        if !transaction.dropped.isEmpty, let observer = self.dropObserver.current {
            observer(transaction.dropped)
        }
    }

    private func readPersistedLastID() -> Int64? {
        guard let select = try? self.connection.statement("SELECT value FROM meta WHERE key = 'last_message_id'"),
            (try? select.step()) == true
        else { return nil }
        let value = select.int64(0)
        try? select.run()
        return value
    }
}
