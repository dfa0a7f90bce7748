/// The SQLite schema and connection settings. Times are microseconds since the Unix epoch; keys and secrets are
/// SHA-256 digests (BLOB), never clear text.
enum SQLiteSchema {
    /// `PRAGMA user_version` of the current schema: version 1 and one per migration.
    static var version: Int64 { 1 + Int64(migrations.count) }

    /// The page size of a new store (an existing one keeps the size it was made with). Half SQLite's default: a
    /// commit writes (and checksums) one WAL frame per page it changed — for a send, the `messages` row's leaf and
    /// the leaves of its two indexes — and a queued message (~0.5–1 KiB) does not need 4 KiB pages. Measured
    /// (`SENDS=1000 BASE=250 [STREAM=1] Benchmarks/instructions.sh`, one commit per send): 205,266 → 199,154
    /// instructions per delivered send, 186,454 → 180,010 offline, SQLite's WAL checksums 11,037 → 6,580; the WAL
    /// written per commit halves.
    static let newStorePageSize = 2048

    /// Settings of every connection. `synchronous=FULL` in WAL mode fsyncs the log at every commit: a returned write
    /// survives power loss.
    static func connectionPragmas(writer: Bool) -> String {
        var pragmas = """
            PRAGMA synchronous = FULL;
            PRAGMA foreign_keys = ON;
            PRAGMA temp_store = MEMORY;
            PRAGMA cache_size = -16384;
            """
        if writer {
            // No `wal_autocheckpoint`: the writer's WAL hook replaces SQLite's automatic checkpoint (WALCheckpoints).
            pragmas += "PRAGMA journal_size_limit = 67108864;\n"
        } else {
            pragmas += "PRAGMA query_only = 1;\n"
        }
        return pragmas
    }

    /// Creates the schema (``version``) in an empty database: version 1 followed by every migration.
    static let create = """
        CREATE TABLE meta (
            key TEXT PRIMARY KEY,
            value INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO meta (key, value) VALUES ('last_message_id', 0), ('auth_epoch', 0);

        CREATE TABLE projects (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL UNIQUE,
            sender_id INTEGER NOT NULL UNIQUE,
            client_key_hash BLOB NOT NULL,
            created_at INTEGER NOT NULL
        );

        -- valid_until NULL: the current key; otherwise a rotated key in its grace period.
        CREATE TABLE server_keys (
            key_hash BLOB PRIMARY KEY,
            project_id INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            created_at INTEGER NOT NULL,
            valid_until INTEGER
        ) WITHOUT ROWID;
        CREATE INDEX server_keys_project ON server_keys (project_id);

        CREATE TABLE devices (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            project_id INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            token TEXT NOT NULL UNIQUE,
            secret_hash BLOB NOT NULL UNIQUE,
            app TEXT NOT NULL,
            platform TEXT NOT NULL,
            registered_at INTEGER NOT NULL
        );
        CREATE INDEX devices_project ON devices (project_id);

        -- One row per pending message of a device. id is the message id (store-wide unique, increasing): rows are
        -- appended at the end of the table. kind: 0 message, 1 deleted_messages marker (collapse_key NULL).
        -- messages_queue is the only per-device index (one random page per message): it answers the policy's
        -- questions (plain count, collapse keys, marker) without touching the table, and a device's pending list
        -- (at most ~100 rows) is sorted by id after the lookup.
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            device_id INTEGER NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
            kind INTEGER NOT NULL,
            collapse_key TEXT,
            expires_at INTEGER NOT NULL,
            body BLOB NOT NULL
        );
        CREATE INDEX messages_queue ON messages (device_id, collapse_key, kind, expires_at);
        CREATE INDEX messages_expiry ON messages (expires_at);

        CREATE TABLE topics (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            project_id INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            UNIQUE (project_id, name)
        );

        -- AUTOINCREMENT: ids never go back, so "id <= the largest id at send time" is the send's snapshot.
        CREATE TABLE subscriptions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            topic_id INTEGER NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
            device_id INTEGER NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
            added_at INTEGER NOT NULL,
            UNIQUE (topic_id, device_id)
        );
        CREATE INDEX subscriptions_device ON subscriptions (device_id);

        -- A topic or condition message being expanded into device queues. cursor: the last device id done;
        -- snapshot: the largest subscription id at send. The row is deleted when the expansion finishes.
        CREATE TABLE topic_messages (
            id INTEGER PRIMARY KEY,
            project_id INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            topic TEXT,
            condition TEXT,
            snapshot INTEGER NOT NULL,
            cursor INTEGER NOT NULL DEFAULT 0,
            collapse_key TEXT,
            expires_at INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            body BLOB NOT NULL
        );

        PRAGMA user_version = 1;
        """ + migrations.joined(separator: "\n")

    /// The migrations, in order: `migrations[0]` brings version 1 to 2, and so on.
    static let migrations = [
        // 2: FCM HTTP v1. Service-account keys (only the public key is kept) and the access tokens issued for them
        // (SHA-256 hashes). A revoked key keeps its row (the CLI lists it) and loses its tokens.
        """
        CREATE TABLE service_account_keys (
            key_id TEXT PRIMARY KEY,
            project_id INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            client_email TEXT NOT NULL,
            public_key TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            revoked_at INTEGER
        ) WITHOUT ROWID;
        CREATE INDEX service_account_keys_project ON service_account_keys (project_id);

        CREATE TABLE access_tokens (
            token_hash BLOB PRIMARY KEY,
            key_id TEXT NOT NULL REFERENCES service_account_keys (key_id) ON DELETE CASCADE,
            project_id INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            expires_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX access_tokens_key ON access_tokens (key_id);
        CREATE INDEX access_tokens_expiry ON access_tokens (expires_at);

        PRAGMA user_version = 2;
        """,
        // 3: quotas on devices (issue 12). device_count is the project's devices, kept by registration and removal
        // so that the per-project cap reads one row instead of counting. last_seen_at is when the device last
        // opened its stream or acknowledged (recorded in batches by the relay); devices unseen for device_expiry
        // are removed. Devices that exist at the migration count as seen then: none expires before its time.
        """
        ALTER TABLE projects ADD COLUMN device_count INTEGER NOT NULL DEFAULT 0;
        UPDATE projects SET device_count = (SELECT count(*) FROM devices WHERE devices.project_id = projects.id);
        ALTER TABLE devices ADD COLUMN last_seen_at INTEGER NOT NULL DEFAULT 0;
        UPDATE devices SET last_seen_at = max(registered_at, CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER));
        CREATE INDEX devices_last_seen ON devices (last_seen_at);

        PRAGMA user_version = 3;
        """,
        // 4: no index on messages.expires_at. It cost a B-tree page (a WAL frame) in every commit that stored or
        // acknowledged a message; the purge finds expired messages by a sweep in id order instead (ExpirySweep).
        """
        DROP INDEX IF EXISTS messages_expiry;

        PRAGMA user_version = 4;
        """,
        // 5: a topic or condition message's restricted_package_name (NULL: none). The expansion gives a copy only
        // to subscribers whose device app is that name; kept in the row so that a resumed expansion keeps it.
        // Messages queued before the migration had none (their restriction was not stored).
        """
        ALTER TABLE topic_messages ADD COLUMN restricted_package_name TEXT;

        PRAGMA user_version = 5;
        """,
        // 6: a topic row lives as long as a subscription to it (WriteTransaction.deleteTopicsWithoutSubscribers);
        // the rows that earlier versions kept after their last subscription went are deleted once.
        """
        DELETE FROM topics WHERE NOT EXISTS (SELECT 1 FROM subscriptions WHERE subscriptions.topic_id = topics.id);

        PRAGMA user_version = 6;
        """,
        // 7: device groups (FCM's notification_key): a name unique in its project, the key senders address the group
        // by (unique in the store), and its member devices, at most 20 (checked by the writer). Members go with their
        // device (ON DELETE CASCADE), and the group with its last member (SQLiteStore+DeviceGroups). Members have a
        // rowid of their own so that `store migrate` copies them in pages of id, as subscriptions.
        """
        CREATE TABLE device_groups (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            project_id INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            notification_key TEXT NOT NULL UNIQUE,
            created_at INTEGER NOT NULL,
            UNIQUE (project_id, name)
        );

        CREATE TABLE device_group_members (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            group_id INTEGER NOT NULL REFERENCES device_groups (id) ON DELETE CASCADE,
            device_id INTEGER NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
            added_at INTEGER NOT NULL,
            UNIQUE (group_id, device_id)
        );
        CREATE INDEX device_group_members_device ON device_group_members (device_id);

        PRAGMA user_version = 7;
        """,
    ]

    /// Brings a database to the current schema (creating it when empty). Runs on the writer connection.
    /// Throws unless the database holds this version's schema, for a store opened read-only (which cannot be
    /// migrated): ``StoreError/Code/unavailable`` for an older one, as ``migrate(_:)`` for a newer or foreign one.
    static func checkReadable(_ connection: SQLiteConnection, path: String) throws(StoreError) {
        let version = try Self.userVersion(connection)
        if version == Self.version { return }
        if version > Self.version { throw StoreError.newerSchema(version, known: Self.version) }
        if version >= 1 {
            throw StoreError.unavailable(
                "\(path) has schema version \(version) and this pushrelay reads version \(Self.version): it is "
                    + "migrated when opened to write (start the daemon, or run a command that writes), never read-only")
        }
        throw StoreError(code: .corrupt, message: "not a PushRelay database (schema version \(version))")
    }

    /// The database's `PRAGMA user_version`: its schema version (0 for a new or foreign file).
    private static func userVersion(_ connection: SQLiteConnection) throws(StoreError) -> Int64 {
        let statement = try connection.statement("PRAGMA user_version")
        _ = try statement.step()
        let version = statement.int64(0)
        try statement.run()
        return version
    }

    static func migrate(_ connection: SQLiteConnection) throws(StoreError) {
        let version = try Self.userVersion(connection)
        if version == Self.version {
            return
        }
        if version >= 1 && version < Self.version {
            // An older PushRelay database: apply the migrations it lacks, in one transaction.
            let pending = Self.migrations[Int(version - 1)...].joined(separator: "\n")
            try connection.execute("BEGIN IMMEDIATE;\n" + pending + "\nCOMMIT;")
            return
        }
        if version > Self.version {
            throw StoreError.newerSchema(version, known: Self.version)
        }
        let tables = try connection.statement("SELECT count(*) FROM sqlite_master")
        _ = try tables.step()
        let count = tables.int64(0)
        try tables.run()
        guard count == 0 else {
            throw StoreError(code: .corrupt, message: "not a PushRelay database (schema version \(version))")
        }
        try connection.execute("BEGIN IMMEDIATE;\n" + Self.create + "\nCOMMIT;")
    }
}
