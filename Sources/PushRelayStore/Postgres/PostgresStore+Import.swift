import Foundation
import NIOCore
import PostgresNIO

/// How many rows of each table a store migration copied.
public struct StoreMigrationReport: Sendable, Hashable, CustomStringConvertible {
    /// Rows copied, by table, in the order they were copied.
    public var rows: [(table: String, count: Int)] = []

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.rows.map(\.table) == rhs.rows.map(\.table) && lhs.rows.map(\.count) == rhs.rows.map(\.count)
    }

    public func hash(into hasher: inout Hasher) {
        for row in rows {
            hasher.combine(row.table)
            hasher.combine(row.count)
        }
    }

    /// Rows copied from `table` (0 if none).
    public func count(of table: String) -> Int { rows.first { $0.table == table }?.count ?? 0 }

    /// `projects 1, server_keys 2, …`.
    public var description: String { rows.map { "\($0.table) \($0.count)" }.joined(separator: ", ") }
}

extension PostgresStore {
    /// One column of a copied table, as both schemas declare it (the same names; SQLite's INTEGER is PostgreSQL's
    /// bigint, or smallint where noted; BLOB is bytea).
    private enum Column: Sendable {
        case integer(String)
        case smallint(String)
        case text(String)
        case blob(String)

        var name: String {
            switch self {
            case .integer(let name), .smallint(let name), .text(let name), .blob(let name): name
            }
        }
    }

    /// A table to copy: its columns, whether `id` is an identity column (inserted with `OVERRIDING SYSTEM VALUE`
    /// and its sequence moved past the copied ids), and whether it is read in pages of `id`.
    private struct Table: Sendable {
        let name: String
        let columns: [Column]
        let identity: Bool
        let pagedByID: Bool
    }

    /// Every table holding data, parents before children (the foreign keys hold at every insert).
    private static let tables: [Table] = [
        Table(
            name: "projects",
            columns: [.integer("id"), .text("name"), .integer("sender_id"), .blob("client_key_hash"),
                      .integer("created_at"), .integer("device_count")],
            identity: true, pagedByID: true),
        Table(
            name: "server_keys",
            columns: [.blob("key_hash"), .integer("project_id"), .integer("created_at"), .integer("valid_until")],
            identity: false, pagedByID: false),
        Table(
            name: "devices",
            columns: [.integer("id"), .integer("project_id"), .text("token"), .blob("secret_hash"), .text("app"),
                      .text("platform"), .integer("registered_at"), .integer("last_seen_at")],
            identity: true, pagedByID: true),
        Table(
            name: "messages",
            columns: [.integer("id"), .integer("device_id"), .smallint("kind"), .text("collapse_key"),
                      .integer("expires_at"), .blob("body")],
            identity: false, pagedByID: true),
        Table(
            name: "topics", columns: [.integer("id"), .integer("project_id"), .text("name")],
            identity: true, pagedByID: true),
        Table(
            name: "subscriptions",
            columns: [.integer("id"), .integer("topic_id"), .integer("device_id"), .integer("added_at")],
            identity: true, pagedByID: true),
        Table(
            name: "topic_messages",
            columns: [.integer("id"), .integer("project_id"), .text("topic"), .text("condition"), .integer("snapshot"),
                      .integer("cursor"), .text("collapse_key"), .integer("expires_at"), .integer("created_at"),
                      .blob("body"), .text("restricted_package_name")],
            identity: false, pagedByID: true),
        Table(
            name: "device_groups",
            columns: [.integer("id"), .integer("project_id"), .text("name"), .text("notification_key"),
                      .integer("created_at")],
            identity: true, pagedByID: true),
        Table(
            name: "device_group_members",
            columns: [.integer("id"), .integer("group_id"), .integer("device_id"), .integer("added_at")],
            identity: true, pagedByID: true),
        Table(
            name: "service_account_keys",
            columns: [.text("key_id"), .integer("project_id"), .text("client_email"), .text("public_key"),
                      .integer("created_at"), .integer("revoked_at")],
            identity: false, pagedByID: false),
        Table(
            name: "access_tokens",
            columns: [.blob("token_hash"), .text("key_id"), .integer("project_id"), .integer("expires_at")],
            identity: false, pagedByID: false),
    ]

    /// A copied value.
    private enum Value: Sendable {
        case integer(Int64)
        case smallint(Int16)
        case text(String)
        case blob([UInt8])
        case null
    }

    /// Rows read from SQLite per page, and inserted per statement.
    private static let pageSize = 500

    /// Copies everything `source` holds (projects with their key hashes, devices with their token and secret
    /// hashes, pending messages, topics and subscriptions, unfinished topic expansions, device groups with their
    /// members, service-account keys and access tokens) into this database, which must hold no project yet, in one
    /// transaction: it all arrives or nothing does. Ids are kept, so tokens, secrets, notification keys, message ids
    /// and `Last-Event-ID`s go on working; the message-id high-water mark and the identity sequences move past what
    /// was copied, and every node's auth cache is invalidated. `source` should not be written meanwhile (stop the
    /// daemon that uses it): hold its writes (``SQLiteStore/withWritesHeld(_:)``), or for a store opened read-only
    /// (``SQLiteStore/Configuration/readOnly``), which cannot hold them, the copy is refused, nothing committed, when
    /// the database file or its write-ahead log changed while it was read.
    ///
    /// Throws ``StoreError/Code/alreadyExists`` when this database already holds a project.
    public func importAll(from source: SQLiteStore, progress: @escaping @Sendable (String, Int) -> Void = { _, _ in })
        async throws -> StoreMigrationReport
    {
        let path = source.context.configuration.path
        /// The database file and its write-ahead log as they are now (nil for a file that is not there).
        let files = { @Sendable in [UnchangedFile(path: path), UnchangedFile(path: path + "-wal")] }
        let watched = source.context.configuration.readOnly ? files() : nil
        return try await self.writer.write { write in
            let existing = try await write.rows("SELECT count(*) FROM projects")
            guard try existing.first?.decode(Int64.self) == 0 else {
                throw StoreError.alreadyExists("the PostgreSQL database already holds projects: migrate into an empty one")
            }
            var report = StoreMigrationReport()
            for table in Self.tables {
                var copied = 0
                var after = Int64.min
                while true {
                    let page = try await Self.readPage(of: table, from: source, after: after)
                    guard !page.isEmpty else { break }
                    try await Self.insert(page, into: table, write: write)
                    copied += page.count
                    progress(table.name, copied)
                    guard table.pagedByID, case .integer(let last) = page.last?.first else { break }
                    after = last
                }
                if table.identity {
                    try await write.run(
                        PostgresQuery(
                            unsafeSQL: """
                                SELECT setval(pg_get_serial_sequence('\(table.name)', 'id'),
                                    greatest((SELECT max(id) FROM \(table.name)), 1))
                                """))
                }
                report.rows.append((table.name, copied))
            }
            let lastID = try await source.readers.read { connection throws(StoreError) -> Int64 in
                let select = try connection.statement("SELECT value FROM meta WHERE key = 'last_message_id'")
                _ = try select.step()
                let value = select.int64(0)
                try select.run()
                return value
            }
            try await write.run(
                "UPDATE meta SET value = greatest(value, \(lastID)) WHERE key = 'last_message_id'")
            write.authChanged = true
            if let watched, files() != watched {
                throw StoreError.unavailable(
                    "\(path) changed while it was copied (a process wrote to it): nothing was copied; stop the daemon "
                        + "that uses it, then run the command again")
            }
            return report
        }
    }

    /// Up to ``pageSize`` rows of `table` from SQLite: those with `id` above `after` in id order when the table is
    /// paged, else all of them (the small key tables).
    private static func readPage(of table: Table, from source: SQLiteStore, after: Int64) async throws(StoreError) -> [[Value]] {
        let names = table.columns.map(\.name).joined(separator: ", ")
        let sql = table.pagedByID
            ? "SELECT \(names) FROM \(table.name) WHERE id > ?1 ORDER BY id LIMIT \(Self.pageSize)"
            : "SELECT \(names) FROM \(table.name)"
        return try await source.readers.read { connection throws(StoreError) -> [[Value]] in
            let select = try connection.statement(composed: sql)
            if table.pagedByID { try select.bind(after, at: 1) }
            var rows: [[Value]] = []
            while try select.step() {
                rows.append(table.columns.enumerated().map { index, column in
                    let index = Int32(index)
                    if select.isNull(index) { return .null }
                    switch column {
                    case .integer: return .integer(select.int64(index))
                    case .smallint: return .smallint(Int16(truncatingIfNeeded: select.int64(index)))
                    case .text: return .text(select.text(index) ?? "")
                    case .blob: return .blob(select.blob(index))
                    }
                })
            }
            return rows
        }
    }

    /// One multi-row `INSERT` of `rows` (at most ``pageSize``, so under PostgreSQL's 65,535 parameters).
    private static func insert(_ rows: [[Value]], into table: Table, write: PostgresWriteContext) async throws {
        var bindings = PostgresBindings(capacity: rows.count * table.columns.count)
        var tuples: [String] = []
        tuples.reserveCapacity(rows.count)
        for row in rows {
            var placeholders: [String] = []
            for value in row {
                switch value {
                case .integer(let integer): bindings.append(integer)
                case .smallint(let integer): bindings.append(integer)
                case .text(let text): bindings.append(text)
                case .blob(let bytes): bindings.append(ByteBuffer(bytes: bytes))
                case .null: bindings.appendNull()
                }
                placeholders.append("$\(bindings.count)")
            }
            tuples.append("(" + placeholders.joined(separator: ", ") + ")")
        }
        let overriding = table.identity ? " OVERRIDING SYSTEM VALUE" : ""
        let sql = "INSERT INTO \(table.name) (\(table.columns.map(\.name).joined(separator: ", ")))\(overriding) VALUES "
            + tuples.joined(separator: ", ")
        try await write.run(PostgresQuery(unsafeSQL: sql, binds: bindings))
    }
}
