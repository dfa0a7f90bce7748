import Foundation
import NIOConcurrencyHelpers
import PushRelayCore
public import Logging

/// The default ``PushStore``: one SQLite database file (system libsqlite3) in WAL mode with `synchronous=FULL`.
///
/// - Writes go to one writer thread that groups every pending request into one transaction and one fsync
///   (group commit), applying the queue policy inside the transaction; callers resume after the commit.
/// - Reads (lookups, pending messages) run on the calling task with pooled read connections, concurrently with the
///   writer (WAL).
/// - Hot authentication lookups are cached in memory (see ``Configuration/authRecheckInterval``).
/// - Topic messages are expanded into device queues by the writer thread between groups, in batches of
///   ``Configuration/fanOutBatchSize`` devices, each batch with its cursor in one transaction.
///
/// Several processes may open the same file (the daemon and the CLI); each has its own writer and they take turns
/// on SQLite's write lock.
public final class SQLiteStore: PushStore {
    let context: StoreContext
    let writer: GroupCommitWriter
    let readers: ReadPool
    /// Where the next purge's expiry sweep starts: after this message id (``ExpirySweep``).
    let expirySweepCursor = NIOLockedValueBox<Int64>(0)

    /// Opens the database (creating it when missing, if ``Configuration/createIfMissing``), checks it (see
    /// ``Configuration/checkIntegrityAtOpen``) and starts the writer thread. Call ``close()`` when done.
    ///
    /// Throws ``StoreError/Code/notFound`` for a missing or empty file that may not be created,
    /// ``StoreError/Code/corrupt`` for a file that is not a PushRelay database or fails the check, and
    /// ``StoreError/Code/unavailable`` when the file cannot be opened or written (permissions, a read-only file
    /// system). With ``Configuration/readOnly`` nothing is written and no writer thread runs.
    public init(configuration: Configuration, logger: Logger = Logger(label: "pushrelay.store")) throws {
        let size = (try? FileManager.default.attributesOfItem(atPath: configuration.path)[.size] as? Int) ?? nil
        let existed = (size ?? 0) > 0
        if !existed, !configuration.createIfMissing || configuration.readOnly {
            throw StoreError.notFound(
                size == nil ? "no store at \(configuration.path)" : "the store \(configuration.path) is empty")
        }
        if configuration.readOnly {
            let (connection, mode, unchanged) = try Self.openReadOnly(configuration)
            self.context = StoreContext(configuration: configuration, logger: logger, lastMessageID: 0)
            self.readers = ReadPool(
                path: configuration.path, busyTimeout: configuration.busyTimeout,
                maxIdle: configuration.maxIdleReadConnections, threads: configuration.readThreads, mode: mode,
                unchanged: unchanged)
            self.writer = GroupCommitWriter(
                connection: connection, context: self.context, persistedLastID: 0, topicMessages: [],
                refusal: StoreError.unavailable("the store \(configuration.path) is open read-only"))
            logger.debug(
                "store opened read-only", metadata: ["relay.store.path": "\(configuration.path)", "relay.store.mode": "\(mode)"])
            return
        }
        // SQLite's own error for these is "unable to open database file": name the cause instead.
        if existed, let refusal = Self.unwritable(configuration.path) {
            throw StoreError.unavailable("\(refusal.path) is not writable: \(refusal.reason)")
        }
        let connection = try SQLiteConnection(path: configuration.path, busyTimeout: configuration.busyTimeout)
        if existed, configuration.checkIntegrityAtOpen {
            try Self.checkIntegrity(connection, path: configuration.path)
        }
        if !existed {
            // Before anything is written: the size is fixed once the file has its first page.
            try connection.execute("PRAGMA page_size = \(SQLiteSchema.newStorePageSize)")
        }
        let journal = try connection.statement("PRAGMA journal_mode = WAL")
        guard try journal.step(), journal.text(0)?.lowercased() == "wal" else {
            throw StoreError.unavailable("cannot switch \(configuration.path) to WAL mode")
        }
        try journal.run()
        try connection.execute(SQLiteSchema.connectionPragmas(writer: true))
        try SQLiteSchema.migrate(connection)

        let last = try connection.statement(
            """
            SELECT max(
                (SELECT value FROM meta WHERE key = 'last_message_id'),
                coalesce((SELECT max(id) FROM messages), 0),
                coalesce((SELECT max(id) FROM topic_messages), 0))
            """
        )
        _ = try last.step()
        let persistedLastID = last.int64(0)
        try last.run()
        var topicMessages: [Int64] = []
        let pending = try connection.statement("SELECT id FROM topic_messages ORDER BY id")
        while try pending.step() {
            topicMessages.append(pending.int64(0))
        }

        self.context = StoreContext(configuration: configuration, logger: logger, lastMessageID: persistedLastID)
        self.readers = ReadPool(
            path: configuration.path,
            busyTimeout: configuration.busyTimeout,
            maxIdle: configuration.maxIdleReadConnections,
            threads: configuration.readThreads
        )
        self.writer = GroupCommitWriter(
            connection: connection,
            context: self.context,
            persistedLastID: persistedLastID,
            topicMessages: topicMessages
        )
        self.writer.start()
        logger.debug(
            "store opened",
            metadata: ["relay.store.path": "\(configuration.path)", "relay.store.fanout_pending": "\(topicMessages.count)"]
        )
    }

    /// Nil when this process may write the existing store at `path` (its directory and its file); else the first of
    /// them it may not write and why (`Permission denied`, `Read-only file system`).
    static func unwritable(_ path: String) -> (path: String, reason: String)? {
        let directory = (path as NSString).deletingLastPathComponent
        for path in [directory.isEmpty ? "." : directory, path] where access(path, W_OK) != 0 {
            return (path, String(cString: strerror(errno)))
        }
        return nil
    }

    /// Whether the existing store of `configuration` can be opened to write by this process; false for a backup
    /// mounted read-only or a data directory this user may not write (open it with ``Configuration/readOnly``).
    public static func isWritable(_ configuration: Configuration) -> Bool {
        Self.unwritable(configuration.path) == nil
    }

    /// Opens an existing store only to read it (``Configuration/readOnly``): its first connection, how it is read,
    /// and for an unchanging file, the file as it was.
    private static func openReadOnly(
        _ configuration: Configuration
    ) throws(StoreError) -> (SQLiteConnection, SQLiteConnection.OpenMode, UnchangedFile?) {
        let mode = Self.readOnlyMode(path: configuration.path)
        do {
            return try Self.openReadOnly(configuration, mode: mode)
        } catch let error where error.code == .unavailable && mode == .readOnly {
            // The last process may have closed the store between the look and the open, its -wal and -shm gone.
            guard Self.readOnlyMode(path: configuration.path) == .immutable else { throw error }
            return try Self.openReadOnly(configuration, mode: .immutable)
        }
    }

    private static func openReadOnly(
        _ configuration: Configuration, mode: SQLiteConnection.OpenMode
    ) throws(StoreError) -> (SQLiteConnection, SQLiteConnection.OpenMode, UnchangedFile?) {
        let path = configuration.path
        let unchanged = mode == .immutable ? UnchangedFile(path: path) : nil
        if mode == .immutable, unchanged == nil {
            throw StoreError.unavailable("cannot examine \(path): \(String(cString: strerror(errno)))")
        }
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(path: path, busyTimeout: configuration.busyTimeout, mode: mode)
            try connection.execute(SQLiteSchema.connectionPragmas(writer: false))
            if configuration.checkIntegrityAtOpen {
                try Self.checkIntegrity(connection, path: path)
            } else {
                try connection.execute("SELECT count(*) FROM sqlite_master")
            }
        } catch let error where error.code == .unavailable && mode == .readOnly {
            // SQLite's own words ("unable to open database file", "attempt to write a readonly database") do not
            // say that it is the write-ahead log's index that could not be had.
            throw StoreError(
                code: .unavailable,
                message: "cannot read \(path) without writing: \(error.message); its write-ahead log \(path)-wal "
                    + "is read through \(path)-shm, which must exist and be readable, or be creatable in the directory "
                    + "(run the command as the daemon's user, or while the daemon runs)",
                engineCode: error.engineCode)
        } catch {
            // A file that changed under the unlocked read explains whatever the check found.
            try unchanged?.verify()
            throw error
        }
        try SQLiteSchema.checkReadable(connection, path: path)
        try unchanged?.verify()
        return (connection, mode, unchanged)
    }

    /// How a store opened read-only is read. A store no process has open has no write-ahead log (the last
    /// connection to close checkpoints it into the database file and removes it, with the `-shm`): the file alone is
    /// the whole store, read as unchanging, and nothing is created beside it. Otherwise SQLite reads through the
    /// `-wal` and `-shm` (``SQLiteConnection/OpenMode/readOnly``), which a read-only open cannot do without them:
    /// a `-wal` with changes whose `-shm` is gone is refused when the directory is not writable, rather than read
    /// without them.
    static func readOnlyMode(path: String) -> SQLiteConnection.OpenMode {
        let wal = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? nil
        let shmExists = FileManager.default.fileExists(atPath: path + "-shm")
        if (wal ?? 0) == 0, !shmExists { return .immutable }
        return .readOnly
    }

    /// `PRAGMA quick_check`: throws ``StoreError/Code/corrupt`` with the first problem it reports.
    private static func checkIntegrity(_ connection: SQLiteConnection, path: String) throws(StoreError) {
        let check = try connection.statement("PRAGMA quick_check(1)")
        guard try check.step() else { throw StoreError(code: .corrupt, message: "\(path): quick_check returned nothing") }
        let verdict = check.text(0) ?? ""
        try check.run()
        guard verdict == "ok" else {
            throw StoreError(code: .corrupt, message: "\(path) is damaged (quick_check: \(verdict))")
        }
    }

    /// Runs `body` while this process holds the store's write lock (`BEGIN IMMEDIATE` on a connection of its own):
    /// nothing commits to the store meanwhile — a daemon still serving it waits, then answers `Unavailable` — so
    /// what `body` reads, in as many read transactions as it likes, is one state of the store. Throws
    /// ``StoreError/Code/unavailable`` when the lock cannot be had within the busy timeout (a writer holds it).
    /// For `pushrelay store migrate`, on a store opened without ``Configuration/automaticFanOut`` (which would
    /// otherwise wait for this lock itself).
    public func withWritesHeld<Result>(_ body: () async throws -> Result) async throws -> Result {
        let lock = try SQLiteConnection(path: self.context.configuration.path, busyTimeout: self.context.configuration.busyTimeout)
        try lock.execute("BEGIN IMMEDIATE")
        defer { try? lock.execute("ROLLBACK") }
        return try await body()
    }

    /// See ``PushStore/commitFailure``.
    public var commitFailure: StoreError? { self.writer.commitFailure }

    /// See ``PushStore/probeCommit()``.
    public func probeCommit() async throws {
        try await self.writer.write { transaction in
            transaction.isProbe = true
            // 64 KiB, more than a message's largest row: if this commits, a message fits. The table is made here
            // rather than in the schema so stores made by earlier versions need no migration.
            try transaction.connection.execute(
                "CREATE TABLE IF NOT EXISTS write_probe (id INTEGER PRIMARY KEY, written_at INTEGER NOT NULL, filler BLOB NOT NULL)")
            let probe = try transaction.connection.statement(
                "INSERT OR REPLACE INTO write_probe (id, written_at, filler) VALUES (1, ?1, zeroblob(65536))")
            try probe.bind(transaction.nowMicros, at: 1)
            try probe.run()
        }
    }

    /// See ``PushStore/setDropObserver(_:)``.
    public func setDropObserver(_ observer: (@Sendable (DroppedMessages) -> Void)?) {
        self.writer.setDropObserver(observer)
    }

    /// See ``PushStore/setCommitObserver(_:)``.
    public func setCommitObserver(_ observer: (@Sendable ([StoredMessage]) -> Void)?) {
        self.writer.setObserver(observer)
    }

    /// See ``PushStore/close()``. Topic expansions in progress resume at the next open.
    public func close() async {
        await self.writer.close()
        self.readers.close()
    }

    /// See ``PushStore/walPages``.
    public var walPages: Int? { self.writer.currentStatistics.walPages }

    /// Counters of the group-commit writer since open: transactions (fsyncs), requests, the largest group.
    public var groupCommitStatistics: GroupCommitStatistics { self.writer.currentStatistics }

    // MARK: Test hooks (internal; `@testable import`)

    /// Holds write requests in the queue (the writer takes none) until ``resumeWriter()``.
    func suspendWriter() { self.writer.queue.suspend() }

    /// Lets the writer run again.
    func resumeWriter() { self.writer.queue.resume() }

    /// Write requests waiting in the queue.
    var queuedWriteRequests: Int { self.writer.queue.count }

    /// Runs one fan-out batch now; false when no topic message is left to expand.
    func expandOneFanOutBatch() async throws -> Bool { try await self.writer.expandOneBatch() }
}
