public import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import PushRelayCore

/// A ``PushStore`` on PostgreSQL, for several nodes sharing one database (postgres-nio, no C library).
///
/// - Writes go to one writer task per node with its own connection: sends and acknowledgements pending together
///   share one transaction of a fixed number of statements (multi-row, `unnest` arrays), committed with
///   `synchronous_commit=on` before any caller resumes. Message ids come from one row (`meta.last_message_id`),
///   taken as a block per transaction and held until the commit: unique in the database and increasing in commit
///   order, hence per device (`max(now µs, last + 1)` as with SQLite).
/// - Each committed batch sends ONE `NOTIFY` naming the devices that got rows; every other node's
///   ``setRemoteCommitObserver(_:)`` hears it and its streams read the store. Auth changes (key rotation,
///   unregister, project deletion) clear every node's auth cache the same way, and through the auth epoch.
/// - Reads (lookups, pending messages, statistics) use a pool of connections (`PostgresClient`).
/// - Topic messages are expanded by whichever node takes them first, one bounded batch per transaction.
///
/// Open it with ``open(configuration:logger:)``; the schema is created and migrated under an advisory lock.
public final class PostgresStore: PushStore {
    let context: PostgresStoreContext
    let writer: PostgresWriter
    let client: PostgresClient
    private let tasks: NIOLockedValueBox<[Task<Void, Never>]>
    private let writerTask: Task<Void, Never>
    private let closed = NIOLockedValueBox(false)

    private init(
        context: PostgresStoreContext, writer: PostgresWriter, client: PostgresClient,
        tasks: [Task<Void, Never>], writerTask: Task<Void, Never>
    ) {
        self.context = context
        self.writer = writer
        self.client = client
        self.tasks = NIOLockedValueBox(tasks)
        self.writerTask = writerTask
    }

    /// Connects, creates or migrates the schema, starts the writer, the read pool and the notification listener.
    /// Throws ``StoreError/Code/unavailable`` when the database cannot be reached. Call ``close()`` when done.
    public static func open(
        configuration: Configuration,
        logger: Logger = Logger(label: "pushrelay.store")
    ) async throws -> PostgresStore {
        let context = PostgresStoreContext(configuration: configuration, logger: logger)
        let (watch, backend) = try await PostgresWriter.connect(context, id: 1000)
        let connection = watch.connection
        do {
            if configuration.readOnly {
                try await PostgresSchema.checkReadable(connection, url: configuration.url, logger: logger)
            } else {
                try await PostgresSchema.migrate(connection, logger: logger)
            }
            let rows = try await connection.query(
                "SELECT value FROM meta WHERE key = 'last_message_id'", logger: logger
            ).collect()
            if let last = try rows.first?.decode(Int64.self) {
                context.ids.withLockedValue { $0.advance(past: last) }
            }
        } catch {
            try? await connection.close()
            throw PostgresStoreContext.storeError(error)
        }
        let client = PostgresClient(
            configuration: Self.clientConfiguration(context),
            eventLoopGroup: configuration.loops,
            backgroundLogger: logger)
        let writer = PostgresWriter(context: context, watch: watch, backend: backend, client: client)
        let listener = PostgresListener(context: context)
        let poll = configuration.fanOutPollInterval
        var tasks = [
            Task { await client.run() },
            Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: poll)
                    writer.queue.requestFanOut()
                }
            },
        ]
        let writerTask = Task { await writer.run() }
        // The first LISTEN is active before open returns, so that no commit of another node made afterwards goes
        // unheard.
        let listenerTask = NIOLockedValueBox<Task<Void, Never>?>(nil)
        do {
            try await withCheckedThrowingContinuation { (started: CheckedContinuation<Void, any Error>) in
                listenerTask.withLockedValue { $0 = Task { await listener.run(started: started) } }
            }
        } catch {
            for task in tasks { task.cancel() }
            listenerTask.withLockedValue { $0 }?.cancel()
            writer.queue.close()
            await writerTask.value
            throw PostgresStoreContext.storeError(error)
        }
        if let task = listenerTask.withLockedValue({ $0 }) { tasks.append(task) }
        logger.debug("store opened", metadata: ["relay.store.url": "\(configuration.url)"])
        return PostgresStore(context: context, writer: writer, client: client, tasks: tasks, writerTask: writerTask)
    }

    /// See ``PushStore/commitFailure``.
    public var commitFailure: StoreError? { self.context.health.current }

    /// See ``PushStore/probeCommit()``.
    public func probeCommit() async throws {
        try await self.writer.write { write in
            write.isProbe = true
            try await write.run(
                """
                INSERT INTO meta (key, value) VALUES ('write_probe', \(write.nowMicros))
                ON CONFLICT (key) DO UPDATE SET value = excluded.value
                """)
        }
    }

    /// See ``PushStore/setDropObserver(_:)``.
    public func setDropObserver(_ observer: (@Sendable (DroppedMessages) -> Void)?) {
        self.context.dropObserver.set(observer)
    }

    /// See ``PushStore/setCommitObserver(_:)``: never called here. Several nodes commit to one database, so this
    /// node's rows reach the remote-commit observer with every other node's, in commit order
    /// (``setRemoteCommitObserver(_:)``).
    public func setCommitObserver(_ observer: (@Sendable ([StoredMessage]) -> Void)?) {}

    /// See ``PushStore/setRemoteCommitObserver(_:)``.
    public func setRemoteCommitObserver(_ observer: (@Sendable (RemoteCommit) -> Void)?) {
        self.context.remoteObserver.set(observer)
    }

    /// See ``PushStore/setLocalStreams(_:)``.
    public func setLocalStreams(_ streaming: (@Sendable ([DeviceID]) -> [DeviceID])?) {
        self.context.localStreams.set(streaming)
    }

    /// See ``PushStore/close()``: finishes the queued writes, then closes every connection.
    public func close() async {
        let first = self.closed.withLockedValue { closed -> Bool in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        self.writer.queue.close()
        // Every transaction has a deadline and every write queued after a failed connection attempt fails at once,
        // so the writer ends; but closing (a daemon's shutdown) waits for it only so long.
        let writerTask = self.writerTask
        do {
            try await Self.race(timeout: Self.writerCloseTimeout) { await writerTask.value }
        } catch {
            self.context.logger.warning(
                "the PostgreSQL writer did not finish within \(Self.writerCloseTimeout); closing without it")
        }
        let tasks = self.tasks.withLockedValue { $0 }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }

    /// How long ``close()`` waits for the writer to finish the writes queued (a daemon gives the store 5 s after
    /// draining).
    static let writerCloseTimeout = Duration.seconds(5)

    /// Counters of the writer since open: transactions, requests, the largest group.
    public var groupCommitStatistics: GroupCommitStatistics {
        self.context.statistics.withLockedValue { $0 }
    }

    /// See ``PushStore/announceStream(device:attachment:)``: `NOTIFY` on the commit channel from a pool connection,
    /// the streams opened while one is on its way together in the next (``PostgresStreamAnnouncements``).
    public func announceStream(device: DeviceID, attachment: UInt64) {
        guard self.context.announcements.add(device: device, attachment: attachment) else { return }
        Task { await self.flushAnnouncements() }
    }

    /// Sends the pending announcements until none is left.
    private func flushAnnouncements() async {
        let logger = self.context.logger
        while let streams = self.context.announcements.next() {
            for payload in PostgresStreamAnnouncements.payloads(node: self.context.node, streams) {
                do {
                    _ = try await self.read { client in
                        try await client.query(
                            "SELECT pg_notify(\(PostgresStoreContext.channel), \(payload))", logger: logger)
                    }
                } catch {
                    logger.debug(
                        "could not announce streams to the other nodes; older streams of those devices elsewhere stay open",
                        metadata: ["relay.error": "\(error)"])
                }
            }
        }
    }

    /// Runs a read on the pool; ``StoreError/closed`` after ``close()``.
    func read<T: Sendable>(_ body: @escaping @Sendable (PostgresClient) async throws -> T) async throws(StoreError) -> T {
        guard !self.closed.withLockedValue({ $0 }) else { throw StoreError.closed }
        let client = self.client
        let timeout = self.context.configuration.readTimeout
        do {
            // The pool waits for a connection as long as PostgreSQL is away, and a query on a server that stopped
            // answering never ends: a read gives up after `readTimeout` (the route answers Unavailable) instead of
            // holding the request. Not a task group, which could return only once the stuck query did: the caller
            // is answered at the deadline and the query is cancelled (it ends when its connection does).
            return try await Self.race(timeout: timeout) { try await body(client) }
        } catch {
            if self.closed.withLockedValue({ $0 }) { throw StoreError.closed }
            throw PostgresStoreContext.storeError(error)
        }
    }

    /// `body`'s result, or ``StoreError/Code/unavailable`` once `timeout` has passed without it; either way at the
    /// first of the two, whatever `body` does with its cancellation.
    static func race<T: Sendable>(
        timeout: Duration, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let outcome = NIOLockedValueBox<CheckedContinuation<T, any Error>?>(nil)
        let work = NIOLockedValueBox<Task<Void, Never>?>(nil)
        let timer = NIOLockedValueBox<Task<Void, Never>?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                outcome.withLockedValue { $0 = continuation }
                let finish = { @Sendable (result: Result<T, any Error>) in
                    outcome.withLockedValue { continuation -> CheckedContinuation<T, any Error>? in
                        defer { continuation = nil }
                        return continuation
                    }?.resume(with: result)
                    timer.withLockedValue { $0 }?.cancel()
                }
                let task = Task {
                    do { finish(.success(try await body())) } catch { finish(.failure(error)) }
                }
                work.withLockedValue { $0 = task }
                timer.withLockedValue {
                    $0 = Task {
                        guard (try? await Task.sleep(for: timeout)) != nil else { return }
                        task.cancel()
                        finish(.failure(StoreError.unavailable("PostgreSQL did not answer a read within \(timeout)")))
                    }
                }
            }
        } onCancel: {
            work.withLockedValue { $0 }?.cancel()
        }
    }

    /// The rows of a read query.
    func rows(_ query: PostgresQuery) async throws(StoreError) -> [PostgresRow] {
        let logger = self.context.logger
        return try await self.read { client in try await client.query(query, logger: logger).collect() }
    }

    // MARK: Test hooks (internal; `@testable import`)

    /// Holds write requests in the queue until ``resumeWriter()``.
    func suspendWriter() { self.writer.queue.suspend() }

    /// Lets the writer run again.
    func resumeWriter() { self.writer.queue.resume() }

    /// Write requests waiting in the queue.
    var queuedWriteRequests: Int { self.writer.queue.count }

    /// Runs one fan-out batch now; false when no topic message is left to expand.
    func expandOneFanOutBatch() async throws -> Bool { try await self.writer.expandOneBatch() }

    static func clientConfiguration(_ context: PostgresStoreContext) -> PostgresClient.Configuration {
        let url = context.configuration.url
        var configuration: PostgresClient.Configuration
        if let socket = url.socketPath {
            configuration = PostgresClient.Configuration(
                unixSocketPath: socket, username: url.user, password: url.password, database: url.database)
        } else {
            configuration = PostgresClient.Configuration(
                host: url.host ?? "localhost", port: url.port, username: url.user, password: url.password,
                database: url.database, tls: .disable)
        }
        configuration.options.maximumConnections = max(context.configuration.readConnections, 1)
        configuration.options.connectTimeout = context.configuration.connectTimeout
        // A read given up at `readTimeout` is only abandoned by this side: postgres-nio sends PostgreSQL no cancel
        // request, and the connection stays leased until the statement ends. One waiting on a lock (a migration,
        // an operator's transaction, `VACUUM FULL`) would keep its connection for as long as the lock is held, and
        // the next reads — the statistics every `metrics_interval` among them — would take the others one by one
        // until no read could run, even of tables nobody locked. PostgreSQL ends each statement of the pool at the
        // same bound instead, which gives the connection back.
        configuration.options.additionalStartupParameters = [
            ("application_name", url.applicationName),
            ("statement_timeout", "\(Self.milliseconds(context.configuration.readTimeout))"),
        ]
        return configuration
    }

    /// `duration` in whole milliseconds, rounded up, at least 1 (`statement_timeout` 0 would mean no bound).
    static func milliseconds(_ duration: Duration) -> Int64 {
        let micros = StoreContext.micros(duration)
        return max(1, micros / 1000 + (micros % 1000 > 0 ? 1 : 0))
    }
}
