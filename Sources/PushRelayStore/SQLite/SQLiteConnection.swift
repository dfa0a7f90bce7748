import CSQLite
#if canImport(Glibc)
import Glibc
#endif
import CSQLiteWAL

// The only file that touches libsqlite3 pointers: open, prepare (with a statement cache), bind, step, read columns,
// finalize, close. Result codes become ``StoreError`` here. A connection is confined to one thread at a time (the
// writer thread, or a reader holding it from the pool); it is not Sendable.

/// One SQLite database connection with its prepared statement cache.
final class SQLiteConnection {
    private var handle: OpaquePointer?
    private var cache: [String: SQLiteStatement] = [:]
    /// Statements of SQL written as literals, by the literal's address: a lookup hashes one integer, where the text
    /// key hashed and compared a few hundred bytes per statement, several times per send.
    private var literalCache: [UInt: SQLiteStatement] = [:]
    /// Kept alive while SQLite holds a pointer to it (``countWALFrames(into:)``).
    private var walFrames: WALFrameCount?

    /// The VFS every connection opens with: SQLite's default one, with each commit's WAL frames written in one
    /// write (`Sources/CSQLiteWAL`); the default itself if that could not be registered (the same files, more
    /// writes).
    static let vfsName: String? =
        pushrelay_wal_vfs_register() == SQLITE_OK ? PUSHRELAY_WAL_VFS_NAME : nil

    /// The process's SQLite configuration, set before the library's first use (`pushrelay_sqlite_configure`: no
    /// memory statistics, whose global mutex every allocation of every connection took): `SQLITE_OK`, or
    /// `SQLITE_MISUSE` when something in the process had used SQLite before the first connection.
    static let libraryConfiguration: Int32 = pushrelay_sqlite_configure()

    /// The library's memory statistic (`sqlite3_memory_used`): stays 0 without memory statistics (tests).
    static var libraryMemoryUsed: Int64 { sqlite3_memory_used() }

    /// How a connection opens the database file.
    enum OpenMode: Sendable, Equatable {
        /// Read and write, creating the file when missing (the writer, and the readers of a store opened to write).
        case readWrite
        /// `SQLITE_OPEN_READONLY`: nothing is written to the database file. SQLite still reads the `-wal` through
        /// the `-shm` (opened read-only when it cannot be written), so what other processes committed is seen, and
        /// locks as usual.
        case readOnly
        /// Read-only on a file taken to be unchanging (URI `immutable=1`): no lock, and no `-wal` or `-shm` is
        /// read or created. Right only for a database with no write-ahead log (the last connection closed); the
        /// caller checks that the file did not change while it was read (``SQLiteStore/Configuration/readOnly``).
        case immutable
    }

    /// Opens the database at `path`, creating it if needed when `mode` is ``OpenMode/readWrite``.
    init(path: String, busyTimeout: Duration, mode: OpenMode = .readWrite) throws(StoreError) {
        _ = Self.libraryConfiguration
        var db: OpaquePointer?
        let rc: Int32
        switch mode {
        case .readWrite:
            rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, Self.vfsName)
        case .readOnly:
            // SQLite's own VFS: the WAL VFS only changes how commits are written.
            rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        case .immutable:
            rc = sqlite3_open_v2(
                Self.fileURI(path) + "?immutable=1", &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, nil)
        }
        guard rc == SQLITE_OK, let db else {
            let message = db.map { Self.describe($0) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw StoreError.unavailable("cannot open database: \(message)", engineCode: rc)
        }
        self.handle = db
        sqlite3_extended_result_codes(db, 1)
        let millis = busyTimeout.components.seconds * 1000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(db, Int32(clamping: millis))
    }

    deinit {
        self.close()
    }

    /// `path` as an SQLite URI (`file:///var/lib/pushrelay/pushrelay.sqlite`): every byte but unreserved ones and
    /// `/` percent-encoded, so that a `?`, `#` or `%` in a directory name stays part of the path.
    static func fileURI(_ path: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes = Array((path.hasPrefix("/") ? "file://" : "file:").utf8)
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "/"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "~"):
                bytes.append(byte)
            default:
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Finalizes every cached statement and closes the connection.
    func close() {
        for statement in self.literalCache.values { statement.finalize() }
        self.literalCache.removeAll()
        for statement in self.cache.values {
            statement.finalize()
        }
        self.cache.removeAll()
        if let handle = self.handle {
            sqlite3_close_v2(handle)
            self.handle = nil
        }
    }

    /// Runs SQL text that may hold several statements and returns no rows (schema, pragmas, BEGIN/COMMIT).
    func execute(_ sql: String) throws(StoreError) {
        let db = try self.db()
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &errorMessage)
        defer { sqlite3_free(errorMessage) }
        if rc != SQLITE_OK {
            let message = Self.describe(db, message: errorMessage.map { String(cString: $0) })
            throw Self.error(rc, message)
        }
    }

    /// A prepared statement for the literal `sql`, from the cache, reset and with no bindings. Valid until the next
    /// call with the same literal on this connection.
    func statement(_ sql: StaticString) throws(StoreError) -> SQLiteStatement {
        precondition(sql.hasPointerRepresentation, "SQL text is never a single scalar")
        let key = UInt(bitPattern: sql.utf8Start)
        if let cached = self.literalCache[key] {
            cached.reset()
            return cached
        }
        let statement = try self.prepare(String(describing: sql))
        self.literalCache[key] = statement
        return statement
    }

    /// A prepared statement for `sql` composed at run time (a fixed prefix and a clause, say), from the cache, reset
    /// and with no bindings. Valid until the next call that uses the same SQL text on this connection.
    func statement(composed sql: String) throws(StoreError) -> SQLiteStatement {
        if let cached = self.cache[sql] {
            cached.reset()
            return cached
        }
        let statement = try self.prepare(sql)
        self.cache[sql] = statement
        return statement
    }

    private func prepare(_ sql: String) throws(StoreError) -> SQLiteStatement {
        let db = try self.db()
        var pointer: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &pointer, nil)
        guard rc == SQLITE_OK, let pointer else {
            throw Self.error(rc, "prepare failed: \(Self.describe(db))")
        }
        return SQLiteStatement(pointer: pointer, connection: db)
    }

    /// A statement that is not cached (SQL text built per call, e.g. with a variable number of parameters).
    /// Finalized when `body` returns.
    func withUncachedStatement<T>(
        _ sql: String,
        _ body: (SQLiteStatement) throws(StoreError) -> T
    ) throws(StoreError) -> T {
        let db = try self.db()
        var pointer: OpaquePointer?
        let rc = sqlite3_prepare_v2(db, sql, -1, &pointer, nil)
        guard rc == SQLITE_OK, let pointer else {
            throw Self.error(rc, "prepare failed: \(Self.describe(db))")
        }
        let statement = SQLiteStatement(pointer: pointer, connection: db)
        defer { statement.finalize() }
        return try body(statement)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    var changes: Int {
        guard let handle = self.handle else { return 0 }
        return Int(sqlite3_changes(handle))
    }

    /// This connection's WAL writes (``vfsName``): those SQLite asked for, and those that reached the file; nil
    /// without a WAL or without the VFS. For tests and diagnostics.
    var walWrites: (requested: UInt64, written: UInt64)? {
        guard let handle = self.handle else { return nil }
        var requested: UInt64 = 0
        var written: UInt64 = 0
        guard pushrelay_wal_vfs_counters(handle, &requested, &written) == SQLITE_OK else { return nil }
        return (requested, written)
    }

    /// From now on, every commit of this connection sets `count` to the frames its WAL holds (SQLite's WAL hook).
    /// This replaces SQLite's automatic checkpoint on this connection: the caller checkpoints
    /// (``checkpointPassively()``, ``WALCheckpoints``).
    func countWALFrames(into count: WALFrameCount) {
        guard let handle = self.handle else { return }
        self.walFrames = count
        sqlite3_wal_hook(
            handle,
            { context, _, _, frames in
                if let context {
                    Unmanaged<WALFrameCount>.fromOpaque(context).takeUnretainedValue().frames = Int(frames)
                }
                return SQLITE_OK
            },
            Unmanaged.passUnretained(count).toOpaque()
        )
    }

    /// A passive checkpoint: copies into the database file the WAL frames that no reader still needs, without
    /// waiting for anyone (the writer goes on committing meanwhile), and syncs the file. Returns the WAL's size and
    /// how much of it is now in the database (frames); when both are equal, the next write starts the WAL over.
    /// `busy` when another connection is checkpointing.
    func checkpointPassively() throws(StoreError) -> WALCheckpointResult {
        let db = try self.db()
        var log: Int32 = 0
        var backfilled: Int32 = 0
        let rc = sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &backfilled)
        switch rc & 0xFF {
        case SQLITE_OK: return .done(log: Int(log), backfilled: Int(backfilled))
        case SQLITE_BUSY: return .busy
        default: throw Self.error(rc, "checkpoint failed: \(Self.describe(db))")
        }
    }

    /// Whether a transaction is open on this connection.
    var inTransaction: Bool {
        guard let handle = self.handle else { return false }
        return sqlite3_get_autocommit(handle) == 0
    }

    private func db() throws(StoreError) -> OpaquePointer {
        guard let handle = self.handle else { throw StoreError.closed }
        return handle
    }

    /// SQLite's message for the last error of `db`, with the system's reason when an I/O call failed: "disk I/O
    /// error" alone does not say that the disk is full or the file gone.
    static func describe(_ db: OpaquePointer, message given: String? = nil) -> String {
        let message = given ?? String(cString: sqlite3_errmsg(db))
        let code = sqlite3_extended_errcode(db) & 0xFF
        let errno = sqlite3_system_errno(db)
        guard errno != 0, code == SQLITE_IOERR || code == SQLITE_FULL || code == SQLITE_CANTOPEN || code == SQLITE_READONLY
        else { return message }
        return "\(message): \(String(cString: strerror(errno)))"
    }

    /// Maps a SQLite result code to a store error.
    static func error(_ rc: Int32, _ message: String) -> StoreError {
        switch rc & 0xFF {
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            return StoreError(code: .corrupt, message: message, engineCode: rc)
        case SQLITE_CONSTRAINT:
            return StoreError(code: .invalidArgument, message: "constraint: \(message)", engineCode: rc)
        default:
            // BUSY, LOCKED, IOERR, FULL, CANTOPEN, NOMEM, READONLY, …: the engine cannot serve now.
            return StoreError(code: .unavailable, message: message, engineCode: rc)
        }
    }
}

/// The WAL's size in frames after a connection's last commit (``SQLiteConnection/countWALFrames(into:)``); read and
/// written on that connection's thread only.
final class WALFrameCount {
    var frames = 0
}

/// What a checkpoint did.
enum WALCheckpointResult: Equatable, Sendable {
    /// `backfilled` of the WAL's `log` frames are in the database file.
    case done(log: Int, backfilled: Int)
    /// Another connection was checkpointing; nothing done.
    case busy
}

/// A prepared statement. Bind parameters (1-based), then `step()` through the rows.
final class SQLiteStatement {
    private var pointer: OpaquePointer?
    private let connection: OpaquePointer

    fileprivate init(pointer: OpaquePointer, connection: OpaquePointer) {
        self.pointer = pointer
        self.connection = connection
    }

    fileprivate func finalize() {
        sqlite3_finalize(self.pointer)
        self.pointer = nil
    }

    fileprivate func reset() {
        sqlite3_reset(self.pointer)
        sqlite3_clear_bindings(self.pointer)
    }

    /// Binds an integer.
    func bind(_ value: Int64, at index: Int32) throws(StoreError) {
        try self.check(sqlite3_bind_int64(self.pointer, index, value))
    }

    /// Binds an integer.
    func bind(_ value: Int, at index: Int32) throws(StoreError) {
        try self.check(sqlite3_bind_int64(self.pointer, index, Int64(value)))
    }

    /// Binds text, or NULL for nil.
    func bind(_ value: String?, at index: Int32) throws(StoreError) {
        guard let value else {
            try self.check(sqlite3_bind_null(self.pointer, index))
            return
        }
        var copy = value
        let rc = copy.withUTF8 { utf8 in
            sqlite3_bind_text(
                self.pointer, index, utf8.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                Int32(utf8.count), pushrelay_sqlite_transient()
            )
        }
        try self.check(rc)
    }

    /// Binds a blob (an empty array binds an empty blob, not NULL).
    func bind(_ value: [UInt8], at index: Int32) throws(StoreError) {
        let rc = value.withUnsafeBytes { bytes in
            sqlite3_bind_blob64(
                self.pointer, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), UInt64(bytes.count),
                pushrelay_sqlite_transient()
            )
        }
        try self.check(rc)
    }

    /// Advances to the next row; false when the statement is done.
    func step() throws(StoreError) -> Bool {
        let rc = sqlite3_step(self.pointer)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE:
            // Ready to be bound and run again (bindings are kept until rebound).
            sqlite3_reset(self.pointer)
            return false
        default:
            let message = SQLiteConnection.describe(self.connection)
            sqlite3_reset(self.pointer)
            throw SQLiteConnection.error(rc, message)
        }
    }

    /// Runs a statement that returns no rows.
    func run() throws(StoreError) {
        while try self.step() {}
        // A statement stepped to SQLITE_DONE must be reset before it is bound again (else SQLITE_MISUSE): loops
        // that bind and run one cached statement per id (acknowledge(device:ids:), the queue policy's removals).
        sqlite3_reset(self.pointer)
    }

    /// Column `index` (0-based) of the current row as an integer (0 for NULL).
    func int64(_ index: Int32) -> Int64 {
        sqlite3_column_int64(self.pointer, index)
    }

    /// Whether column `index` of the current row is NULL.
    func isNull(_ index: Int32) -> Bool {
        sqlite3_column_type(self.pointer, index) == SQLITE_NULL
    }

    /// Column `index` as text; nil for NULL.
    func text(_ index: Int32) -> String? {
        guard let cString = sqlite3_column_text(self.pointer, index) else { return nil }
        let count = Int(sqlite3_column_bytes(self.pointer, index))
        return String(decoding: UnsafeBufferPointer(start: cString, count: count), as: UTF8.self)
    }

    /// Column `index` as bytes (empty for NULL).
    func blob(_ index: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(self.pointer, index))
        guard count > 0, let base = sqlite3_column_blob(self.pointer, index) else { return [] }
        return Array(UnsafeRawBufferPointer(start: base, count: count))
    }

    private func check(_ rc: Int32) throws(StoreError) {
        if rc != SQLITE_OK {
            throw SQLiteConnection.error(rc, "bind failed: \(SQLiteConnection.describe(self.connection))")
        }
    }
}
