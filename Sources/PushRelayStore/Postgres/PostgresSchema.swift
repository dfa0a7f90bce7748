import Foundation
import Logging
import PostgresNIO

/// The PostgreSQL schema, as versioned migrations. Times are microseconds since the Unix epoch; keys and secrets
/// are SHA-256 digests (`bytea`), never clear text. Same tables as ``SQLiteSchema``.
enum PostgresSchema {
    /// The advisory lock every node takes while it migrates, so that nodes starting together apply each migration
    /// once (`pg_advisory_lock` is per database; the number is "pushrelay" in ASCII, truncated).
    static let migrationLock: Int64 = 0x7075_7368_7265_6c61

    /// Migration `n` is `migrations[n - 1]`; each runs in its own transaction with its version row.
    static let migrations: [String] = [
        """
        CREATE TABLE meta (
            key text PRIMARY KEY,
            value bigint NOT NULL
        );
        INSERT INTO meta (key, value) VALUES ('last_message_id', 0), ('auth_epoch', 0);

        CREATE TABLE projects (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            name text NOT NULL UNIQUE,
            sender_id bigint NOT NULL UNIQUE,
            client_key_hash bytea NOT NULL,
            created_at bigint NOT NULL
        );

        -- valid_until NULL: the current key; otherwise a rotated key in its grace period.
        CREATE TABLE server_keys (
            key_hash bytea PRIMARY KEY,
            project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            created_at bigint NOT NULL,
            valid_until bigint
        );
        CREATE INDEX server_keys_project ON server_keys (project_id);

        CREATE TABLE devices (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            token text NOT NULL UNIQUE,
            secret_hash bytea NOT NULL UNIQUE,
            app text NOT NULL,
            platform text NOT NULL,
            registered_at bigint NOT NULL
        );
        CREATE INDEX devices_project ON devices (project_id);

        -- One row per pending message of a device; id is the message id (unique in the database, increasing in
        -- commit order: see meta.last_message_id). kind: 0 message, 1 deleted_messages marker.
        CREATE TABLE messages (
            id bigint PRIMARY KEY,
            device_id bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
            kind smallint NOT NULL,
            collapse_key text,
            expires_at bigint NOT NULL,
            body bytea NOT NULL
        );
        CREATE INDEX messages_device ON messages (device_id, id);
        CREATE INDEX messages_expiry ON messages (expires_at);

        CREATE TABLE topics (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            name text NOT NULL,
            UNIQUE (project_id, name)
        );

        CREATE TABLE subscriptions (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            topic_id bigint NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
            device_id bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
            added_at bigint NOT NULL,
            UNIQUE (topic_id, device_id)
        );
        CREATE INDEX subscriptions_device ON subscriptions (device_id);
        CREATE INDEX subscriptions_fanout ON subscriptions (topic_id, device_id, id);

        -- A topic or condition message being expanded; cursor: the last device id done; snapshot: the largest
        -- subscription id at send. Deleted when the expansion finishes.
        CREATE TABLE topic_messages (
            id bigint PRIMARY KEY,
            project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            topic text,
            condition text,
            snapshot bigint NOT NULL,
            cursor bigint NOT NULL DEFAULT 0,
            collapse_key text,
            expires_at bigint NOT NULL,
            created_at bigint NOT NULL,
            body bytea NOT NULL
        );
        """,
        // 2: FCM HTTP v1. Service-account keys (only the public key) and the access tokens issued for them (SHA-256
        // hashes). A revoked key keeps its row and loses its tokens.
        """
        CREATE TABLE service_account_keys (
            key_id text PRIMARY KEY,
            project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            client_email text NOT NULL,
            public_key text NOT NULL,
            created_at bigint NOT NULL,
            revoked_at bigint
        );
        CREATE INDEX service_account_keys_project ON service_account_keys (project_id);

        CREATE TABLE access_tokens (
            token_hash bytea PRIMARY KEY,
            key_id text NOT NULL REFERENCES service_account_keys (key_id) ON DELETE CASCADE,
            project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            expires_at bigint NOT NULL
        );
        CREATE INDEX access_tokens_key ON access_tokens (key_id);
        CREATE INDEX access_tokens_expiry ON access_tokens (expires_at);
        """,
        // 3: quotas on devices (issue 12): the project's device count, kept by registration and removal, for the
        // per-project cap; when each device was last seen, for device expiry (existing devices count as seen now).
        """
        ALTER TABLE projects ADD COLUMN device_count bigint NOT NULL DEFAULT 0;
        UPDATE projects SET device_count = (SELECT count(*) FROM devices WHERE devices.project_id = projects.id);
        ALTER TABLE devices ADD COLUMN last_seen_at bigint NOT NULL DEFAULT 0;
        UPDATE devices SET last_seen_at = greatest(registered_at, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint);
        CREATE INDEX devices_last_seen ON devices (last_seen_at);
        """,
        // 4: the writer's lock-and-load in one round trip (was two statements). Locks the devices in id order (so
        // nodes never deadlock on each other), then reads their queues in a second statement: in a VOLATILE
        // function each statement takes a new snapshot, so the rows include every commit made by another node
        // before the locks were granted. Each device comes back once with NULL message columns, then its
        // messages. The read is two scans (UNION ALL), not a join: on a messages table full of dead rows the
        // planner chose a hash join over a sequential scan of it (1.3 ms a call against a few µs by the index).
        // (The body stays on one line: migrations are split into statements at a semicolon that ends a line.)
        """
        CREATE FUNCTION pushrelay_lock_queues(locked_devices bigint[]) RETURNS TABLE (q_device bigint, q_id bigint, q_kind smallint, q_collapse_key text, q_expires_at bigint) LANGUAGE plpgsql VOLATILE AS $fn$ BEGIN PERFORM count(*) FROM (SELECT 1 FROM devices WHERE id = ANY(locked_devices) ORDER BY id FOR UPDATE) AS locked; RETURN QUERY SELECT d.id, NULL::bigint, NULL::smallint, NULL::text, NULL::bigint FROM devices AS d WHERE d.id = ANY(locked_devices) UNION ALL SELECT m.device_id, m.id, m.kind, m.collapse_key, m.expires_at FROM messages AS m WHERE m.device_id = ANY(locked_devices); END $fn$;
        """,
        // 5: a topic or condition message's restricted_package_name (NULL: none): only subscribers whose device
        // app is that name get a copy; kept in the row so that a node resuming the expansion keeps it.
        """
        ALTER TABLE topic_messages ADD COLUMN restricted_package_name text;
        """,
        // 6: an exact topic-send snapshot. subscriptions.id is taken at insert, not at commit: a subscription that
        // another node inserted before a send but committed after it can have an id below the send's largest
        // visible id. Each subscription now records its transaction (created_xid), each topic message the
        // transaction snapshot of its commit statement (visible), and the expansion takes only the rows whose
        // transaction that snapshot sees. Rows of before the migration keep created_xid NULL (all committed before
        // it: visible to every later snapshot); messages of before it keep visible NULL (the id rule alone). The
        // default is set after the column is added, so that the existing rows are not rewritten.
        """
        ALTER TABLE subscriptions ADD COLUMN created_xid xid8;
        ALTER TABLE subscriptions ALTER COLUMN created_xid SET DEFAULT pg_current_xact_id();
        ALTER TABLE topic_messages ADD COLUMN visible pg_snapshot;
        """,
        // 7: a topic row lives as long as a subscription to it (PostgresStore.deleteTopicsWithoutSubscribers); the
        // rows that earlier versions kept after their last subscription went are deleted once. A node of an earlier
        // version may be subscribing meanwhile (a rolling upgrade): its upsert holds the topic's row, so the
        // candidates are locked first, skipping held ones, and checked again by a statement of their own (a
        // single DELETE would check under its first snapshot and could delete a subscription that had just
        // committed). (The body stays on one line: migrations are split at a semicolon that ends a line.)
        """
        DO $mig$ DECLARE candidates bigint[]; BEGIN SELECT array_agg(id) INTO candidates FROM (SELECT t.id FROM topics t WHERE NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.topic_id = t.id) ORDER BY t.id FOR UPDATE SKIP LOCKED) AS c; DELETE FROM topics t WHERE t.id = ANY(candidates) AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.topic_id = t.id); END $mig$;
        """,
        // 8: device groups (FCM's notification_key), as SQLite's version 7: a name unique in its project, the key
        // senders address the group by, and its members (at most 20). Every change to a group's members holds the
        // group's row first (PostgresStore+DeviceGroups), so that the count and the deletion of a group left without
        // members see every other change committed.
        """
        CREATE TABLE device_groups (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            name text NOT NULL,
            notification_key text NOT NULL UNIQUE,
            created_at bigint NOT NULL,
            UNIQUE (project_id, name)
        );
        CREATE TABLE device_group_members (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            group_id bigint NOT NULL REFERENCES device_groups (id) ON DELETE CASCADE,
            device_id bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
            added_at bigint NOT NULL,
            UNIQUE (group_id, device_id)
        );
        CREATE INDEX device_group_members_device ON device_group_members (device_id);
        """,
    ]

    /// A migration's statements (each ends with `;` at the end of a line).
    static func statements(of migration: String) -> [String] {
        migration.components(separatedBy: ";\n").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            .map { $0.hasSuffix(";") ? String($0.dropLast()) : $0 }.filter { !$0.isEmpty }
    }

    /// The newest schema version this build knows.
    static var version: Int { self.migrations.count }

    /// For a store opened read-only (``PostgresStore/Configuration/readOnly``): the schema must be this release's,
    /// as it is; nothing is created or migrated (the nodes of another release may be running on it). Throws
    /// ``StoreError/Code/unavailable`` otherwise, saying what to run.
    static func checkReadable(_ connection: PostgresConnection, url: PostgresURL, logger: Logger) async throws {
        var tables = 0
        for try await count in try await connection.query(
            "SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = 'pushrelay_migrations' AND schemaname = current_schema()",
            logger: logger
        ).decode(Int64.self) {
            tables = Int(count)
        }
        let current = tables > 0 ? try await Self.appliedVersion(connection, logger: logger) : 0
        if current == Self.version { return }
        if current > Self.version { throw StoreError.newerSchema(Int64(current), known: Int64(Self.version)) }
        if current == 0 {
            throw StoreError.unavailable(
                "\(url) holds no PushRelay store yet: it is created when opened to write (`pushrelay store init "
                    + "--store postgres`, a command that writes, or a node), never read-only")
        }
        throw StoreError.unavailable(
            "\(url) has schema version \(current) and this pushrelay reads version \(Self.version): it is migrated "
                + "when opened to write (start a node of this release, or run a command that writes), never read-only")
    }

    /// The last migration applied (`pushrelay_migrations` must exist); 0 for none.
    private static func appliedVersion(_ connection: PostgresConnection, logger: Logger) async throws -> Int {
        var current = 0
        for try await version in try await connection.query(
            "SELECT coalesce(max(version), 0)::int8 FROM pushrelay_migrations", logger: logger
        ).decode(Int64.self) {
            current = Int(version)
        }
        return current
    }

    /// Brings the database to ``version`` under the advisory lock: the first node to start applies what is
    /// missing, the others wait and find nothing to do. Refuses a database of a newer schema.
    static func migrate(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("SELECT pg_advisory_lock(\(Self.migrationLock))", logger: logger)
        do {
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS pushrelay_migrations (
                    version integer PRIMARY KEY,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """,
                logger: logger
            )
            let current = try await Self.appliedVersion(connection, logger: logger)
            if current > Self.version {
                throw StoreError.newerSchema(Int64(current), known: Int64(Self.version))
            }
            for version in (current + 1)...max(Self.version, current + 1) where version <= Self.version {
                try await connection.query("BEGIN", logger: logger)
                do {
                    for statement in Self.statements(of: Self.migrations[version - 1]) {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.query(
                        "INSERT INTO pushrelay_migrations (version) VALUES (\(version))", logger: logger)
                    try await connection.query("COMMIT", logger: logger)
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
                logger.info("database migrated", metadata: ["relay.store.schema": "\(version)"])
            }
        } catch {
            _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.migrationLock))", logger: logger)
            throw error
        }
        try await connection.query("SELECT pg_advisory_unlock(\(Self.migrationLock))", logger: logger)
    }
}
