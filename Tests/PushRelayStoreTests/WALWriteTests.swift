import Testing

@testable import PushRelayStore

/// The store's SQLite VFS (`Sources/CSQLiteWAL`): each commit's WAL frames reach the file in one write, and what a
/// transaction wrote (spilled, rewritten, larger than the buffer) is exactly what a reader and a checkpoint see.
@Suite("Store: the WAL written in one write per commit")
struct WALWriteTests {
    static func open(_ directory: String, cachePages: Int? = nil) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: directory + "/wal.db", busyTimeout: .seconds(5))
        try connection.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA wal_autocheckpoint = 0;")
        if let cachePages { try connection.execute("PRAGMA cache_size = \(cachePages);") }
        return connection
    }

    /// A fresh database with table `t` (`id`, blob `v` indexed, `n`).
    static func create(_ directory: String, cachePages: Int? = nil) throws -> SQLiteConnection {
        let connection = try open(directory, cachePages: cachePages)
        try connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB, n INTEGER); CREATE INDEX t_v ON t (v);")
        return connection
    }

    /// Runs `body` in one write transaction and commits; the WAL writes SQLite asked for meanwhile, and those written.
    static func commit(_ connection: SQLiteConnection, _ body: () throws -> Void) throws -> (asked: UInt64, written: UInt64) {
        let before = try #require(connection.walWrites)
        try connection.execute("BEGIN IMMEDIATE;")
        try body()
        try connection.execute("COMMIT;")
        let after = try #require(connection.walWrites)
        return (after.requested - before.requested, after.written - before.written)
    }

    static func count(_ connection: SQLiteConnection, _ sql: String) throws -> Int64 {
        let statement = try connection.statement(composed: sql)
        _ = try statement.step()
        let value = statement.int64(0)
        try statement.run()
        return value
    }

    /// The number `sql` answers, read on a connection of its own (what another reader sees).
    static func count(in directory: String, _ sql: String) throws -> Int64 {
        let reader = try open(directory)
        defer { reader.close() }
        return try count(reader, sql)
    }

    /// Inserts `rows` rows of `size` random bytes each (a row per page or so, plus the index's pages).
    static func insert(_ connection: SQLiteConnection, rows: Int, size: Int) throws {
        try connection.execute(
            """
            INSERT INTO t (v) SELECT randomblob(\(size)) FROM
                (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < \(rows)) SELECT x FROM c);
            """)
    }

    /// The library is configured before its first use (`pushrelay_sqlite_configure`): without memory statistics,
    /// whose global mutex every allocation took, the statistic stays 0 while connections allocate.
    @Test("SQLite keeps no memory statistics")
    func noMemoryStatistics() async throws {
        try await withTemporaryDirectory { directory in
            let connection = try Self.create(directory)
            defer { connection.close() }
            try Self.insert(connection, rows: 200, size: 600)
            #expect(try Self.count(connection, "SELECT count(*) FROM t") == 200)
            #expect(SQLiteConnection.libraryConfiguration == 0, "SQLITE_OK: configured before the library initialized")
            #expect(SQLiteConnection.libraryMemoryUsed == 0)
        }
    }

    /// An engine error from a failed system call names the system's reason ("disk I/O error" alone does not say
    /// the disk is full).
    @Test("I/O errors carry the system's reason")
    func ioErrorsSayWhy() throws {
        do {
            _ = try SQLiteConnection(path: "/nonexistent-\(UInt64.random(in: 0...UInt64.max))/x.db", busyTimeout: .seconds(1))
            Issue.record("opened a database in a directory that does not exist")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("No such file or directory"), "\(error)")
        }
    }

    /// A new store is made with ``SQLiteSchema/newStorePageSize`` (2 KiB) pages; a store made before with SQLite's
    /// 4 KiB keeps them, and serves.
    @Test("new stores have 2 KiB pages; existing ones keep theirs")
    func pageSizeOfNewAndExistingStores() async throws {
        func pageSize(_ path: String) throws -> Int64 {
            let connection = try SQLiteConnection(path: path, busyTimeout: .seconds(5))
            defer { connection.close() }
            return try Self.count(connection, "PRAGMA page_size")
        }
        try await withTemporaryDirectory { directory in
            let configuration = SQLiteStore.Configuration(directory: directory)
            let store = try SQLiteStore(configuration: configuration)
            _ = try await store.createProject(name: "new")
            await store.close()
            #expect(try pageSize(configuration.path) == Int64(SQLiteSchema.newStorePageSize))
        }
        try await withTemporaryDirectory { directory in
            let configuration = SQLiteStore.Configuration(directory: directory)
            let old = try SQLiteConnection(path: configuration.path, busyTimeout: .seconds(5))
            try old.execute("PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE x (y); DROP TABLE x;")
            old.close()
            let store = try SQLiteStore(configuration: configuration)
            _ = try await store.createProject(name: "old")
            #expect(try await store.projects().map(\.name) == ["old"])
            await store.close()
            #expect(try pageSize(configuration.path) == 4096)
        }
    }

    @Test("a commit of several pages: two writes asked per frame, one write to the file")
    func oneWritePerCommit() async throws {
        try await withTemporaryDirectory { directory in
            let connection = try Self.create(directory)
            defer { connection.close() }
            let writes = try Self.commit(connection) {
                try Self.insert(connection, rows: 8, size: 1000)  // ≈ 6 pages of table and index: ≈ 25 kB of frames
            }
            #expect(writes.asked >= 8, "SQLite writes a frame as header, then page")
            #expect(writes.written == 1, "\(writes.asked) asked")
            #expect(try Self.count(in: directory, "SELECT count(*) FROM t") == 8)
        }
    }

    @Test("a transaction larger than the cache and the buffer: spilled and rewritten pages commit whole, and survive a checkpoint")
    func largeTransactionStaysWhole() async throws {
        try await withTemporaryDirectory { directory in
            let connection = try Self.create(directory, cachePages: 10)
            defer { connection.close() }
            let writes = try Self.commit(connection) {
                try Self.insert(connection, rows: 2000, size: 1000)  // spills the 10-page cache, passes the 64 KiB buffer
                try connection.execute("UPDATE t SET n = id * 7;")  // rewrites pages already spilled to the WAL
            }
            // A 10-page cache reads spilled pages back all the time, and each read writes what is held first: here
            // the point is what the file holds, not how few writes it took (never more than SQLite asked for).
            #expect(writes.written > 1 && writes.written <= writes.asked)
            let reader = try Self.open(directory)
            defer { reader.close() }
            #expect(try Self.count(reader, "SELECT count(*) FROM t") == 2000)
            #expect(try Self.count(reader, "SELECT sum(n) FROM t") == 7 * 2000 * 2001 / 2)
            #expect(try Self.count(reader, "SELECT sum(length(v)) FROM t") == 2_000_000)
            try connection.execute("PRAGMA wal_checkpoint(TRUNCATE);")
            let fresh = try Self.open(directory)
            defer { fresh.close() }
            let check = try fresh.statement("PRAGMA integrity_check")
            _ = try check.step()
            #expect(check.text(0) == "ok")
            try check.run()
            #expect(try Self.count(fresh, "SELECT sum(n) FROM t") == 7 * 2000 * 2001 / 2)
        }
    }

    /// With a cache large enough to hold the transaction, its frames go out in buffer-sized runs at the commit. (A
    /// run of 128 KiB or more would be cut to nothing by the unix VFS, which reported `SQLITE_FULL`.)
    @Test("a transaction of megabytes without spilling: written in buffer-sized runs, read back whole")
    func largeCommitInRuns() async throws {
        try await withTemporaryDirectory { directory in
            let connection = try Self.create(directory, cachePages: 16384)
            defer { connection.close() }
            let writes = try Self.commit(connection) { try Self.insert(connection, rows: 2000, size: 1000) }
            // ≈ 2,800 frames (≈ 11 MB: the index holds the 1,000-byte values too), asked as ≈ 5,600 writes, go out in
            // runs of up to 64 KiB: ≈ 180 writes.
            #expect(writes.written > 1 && writes.written * 20 < writes.asked, "\(writes.written) of \(writes.asked)")
            #expect(try Self.count(in: directory, "SELECT sum(length(v)) FROM t") == 2_000_000)
        }
    }

    @Test("a rolled-back transaction leaves nothing, and the next commit is whole")
    func rollbackThenCommit() async throws {
        try await withTemporaryDirectory { directory in
            let connection = try Self.create(directory, cachePages: 10)
            defer { connection.close() }
            try connection.execute("BEGIN IMMEDIATE;")
            try Self.insert(connection, rows: 500, size: 1000)  // spilled frames in the WAL, never committed
            try connection.execute("ROLLBACK;")
            _ = try Self.commit(connection) { try Self.insert(connection, rows: 3, size: 100) }
            #expect(try Self.count(in: directory, "SELECT count(*) FROM t") == 3)
        }
    }
}
