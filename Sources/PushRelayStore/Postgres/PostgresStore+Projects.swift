import Foundation
import NIOCore
import PostgresNIO

extension PostgresStore {
    /// See ``PushStore/createProject(name:)``.
    public func createProject(name: String) async throws -> ProjectCredentials {
        try ProjectName.validate(name)
        let credentials = self.context.configuration.credentials
        return try await self.writer.write { write in
            guard try await write.rows("SELECT 1 FROM projects WHERE name = \(name)").isEmpty else {
                throw StoreError.alreadyExists("a project named \(name) exists")
            }
            var senderID: Int64
            repeat {
                senderID = Int64.random(in: 10_000_000_000...99_999_999_999)
            } while try await !write.rows("SELECT 1 FROM projects WHERE sender_id = \(senderID)").isEmpty
            let serverKey = credentials.serverKey()
            let clientKey = credentials.clientKey()
            let rows = try await write.rows(
                """
                INSERT INTO projects (name, sender_id, client_key_hash, created_at)
                VALUES (\(name), \(senderID), \(ByteBuffer(bytes: KeyHash(of: clientKey).bytes)), \(write.nowMicros))
                RETURNING id
                """
            )
            let id = ProjectID(rawValue: try rows[0].decode(Int64.self))
            try await Self.insertServerKey(serverKey, project: id, in: write)
            let project = Project(
                id: id, name: name, senderID: senderID, createdAt: StoreContext.date(micros: write.nowMicros))
            return ProjectCredentials(project: project, serverKey: serverKey, clientKey: clientKey)
        }
    }

    private static func insertServerKey(_ key: String, project: ProjectID, in write: PostgresWriteContext) async throws {
        try await write.run(
            """
            INSERT INTO server_keys (key_hash, project_id, created_at, valid_until)
            VALUES (\(ByteBuffer(bytes: KeyHash(of: key).bytes)), \(project.rawValue), \(write.nowMicros), NULL)
            """
        )
    }

    /// See ``PushStore/projects()``.
    public func projects() async throws -> [Project] {
        try await self.rows("SELECT id, name, sender_id, created_at FROM projects ORDER BY name").map(Self.project)
    }

    /// See ``PushStore/project(named:)``.
    public func project(named name: String) async throws -> Project? {
        try await self.rows("SELECT id, name, sender_id, created_at FROM projects WHERE name = \(name)")
            .first.map(Self.project)
    }

    /// See ``PushStore/project(id:)``.
    public func project(id: ProjectID) async throws -> Project? {
        try await self.refreshAuthCacheIfDue()
        let cache = self.context.authCache
        if let project = cache.project(id) {
            return project
        }
        let generation = cache.generation
        let project = try await self.rows(
            "SELECT id, name, sender_id, created_at FROM projects WHERE id = \(id.rawValue)"
        ).first.map(Self.project)
        if let project {
            cache.insertProject(project, generation: generation)
        }
        return project
    }

    /// See ``PushStore/deleteProject(named:)``.
    public func deleteProject(named name: String) async throws -> Bool {
        try await self.writer.write { write in
            let deleted = try await !write.rows("DELETE FROM projects WHERE name = \(name) RETURNING id").isEmpty
            if deleted { write.authChanged = true }
            return deleted
        }
    }

    /// See ``PushStore/rotateServerKey(project:gracePeriod:)``.
    public func rotateServerKey(project name: String, gracePeriod: Duration) async throws -> String {
        let grace = max(StoreContext.micros(gracePeriod), 0)
        let credentials = self.context.configuration.credentials
        return try await self.writer.write { write in
            let project = try await Self.projectID(named: name, in: write)
            let graceEnd = StoreContext.saturatingSum(write.nowMicros, grace)
            try await write.run(
                """
                UPDATE server_keys SET valid_until = \(graceEnd)
                WHERE project_id = \(project.rawValue) AND (valid_until IS NULL OR valid_until > \(graceEnd))
                """
            )
            let key = credentials.serverKey()
            try await Self.insertServerKey(key, project: project, in: write)
            write.authChanged = true
            return key
        }
    }

    /// See ``PushStore/revokePreviousServerKeys(project:)``.
    public func revokePreviousServerKeys(project name: String) async throws -> Int {
        try await self.writer.write { write in
            let project = try await Self.projectID(named: name, in: write)
            let revoked = try await write.rows(
                """
                UPDATE server_keys SET valid_until = \(write.nowMicros)
                WHERE project_id = \(project.rawValue) AND valid_until IS NOT NULL AND valid_until > \(write.nowMicros)
                RETURNING 1
                """
            ).count
            if revoked > 0 { write.authChanged = true }
            return revoked
        }
    }

    /// See ``PushStore/rotateClientKey(project:)``.
    public func rotateClientKey(project name: String) async throws -> String {
        let credentials = self.context.configuration.credentials
        return try await self.writer.write { write in
            let project = try await Self.projectID(named: name, in: write)
            let key = credentials.clientKey()
            try await write.run(
                """
                UPDATE projects SET client_key_hash = \(ByteBuffer(bytes: KeyHash(of: key).bytes))
                WHERE id = \(project.rawValue)
                """)
            return key
        }
    }

    /// The id of the project named `name` (its row locked), or ``StoreError/Code/notFound``.
    private static func projectID(named name: String, in write: PostgresWriteContext) async throws -> ProjectID {
        guard let row = try await write.rows("SELECT id FROM projects WHERE name = \(name) FOR UPDATE").first else {
            throw StoreError.notFound("no project named \(name)")
        }
        return ProjectID(rawValue: try row.decode(Int64.self))
    }

    /// See ``PushStore/authenticateServerKey(_:)``.
    public func authenticateServerKey(_ key: String) async throws -> Project? {
        try await self.authenticate(.serverKey, key)
    }

    /// The project of a server key or an access token: from this node's memory, else its row (the read pool), which
    /// the cache then keeps (``AuthCache/project(of:_:nowMicros:read:)``).
    func authenticate(_ credential: AuthCache.Credential, _ text: String) async throws -> Project? {
        let hash = KeyHash(of: text)
        try await self.refreshAuthCacheIfDue()
        // The credential's table, its hash column and its end (NULL: none).
        let (table, hashColumn, endColumn) =
            switch credential {
            case .serverKey: ("server_keys", "key_hash", "valid_until")
            case .accessToken: ("access_tokens", "token_hash", "expires_at")
            }
        return try await self.context.authCache.project(of: credential, hash, nowMicros: self.context.nowMicros) {
            let rows = try await self.rows(
                """
                SELECT p.id, p.name, p.sender_id, p.created_at, c.\(unescaped: hashColumn), c.\(unescaped: endColumn)
                FROM \(unescaped: table) c JOIN projects p ON p.id = c.project_id
                WHERE c.\(unescaped: hashColumn) = \(ByteBuffer(bytes: hash.bytes))
                """
            )
            guard let row = rows.first else { return nil }
            do {
                let (_, _, _, _, stored, end) = try row.decode((Int64, String, Int64, Int64, ByteBuffer, Int64?).self)
                guard hash.matches(Array(stored.readableBytesView)) else { return nil }
                return AuthCache.ServerKeyEntry(project: try Self.project(row), validUntil: end)
            } catch {
                throw PostgresStoreContext.storeError(error)
            }
        }
    }

    /// See ``PushStore/authenticateClientKey(_:project:)``.
    public func authenticateClientKey(_ key: String, project name: String) async throws -> Project? {
        let hash = KeyHash(of: key)
        let rows = try await self.rows(
            "SELECT id, name, sender_id, created_at, client_key_hash FROM projects WHERE name = \(name)")
        guard let row = rows.first else { return nil }
        let (_, _, _, _, stored) = try row.decode((Int64, String, Int64, Int64, ByteBuffer).self)
        return hash.matches(Array(stored.readableBytesView)) ? try Self.project(row) : nil
    }

    /// Re-reads the auth epoch when due: a notification from another node may have been missed.
    func refreshAuthCacheIfDue() async throws(StoreError) {
        let cache = self.context.authCache
        guard cache.epochCheckDue(interval: self.context.configuration.authRecheckInterval) else { return }
        let rows = try await self.rows("SELECT value FROM meta WHERE key = 'auth_epoch'")
        do {
            if let epoch = try rows.first?.decode(Int64.self) { cache.observe(epoch: epoch) }
        } catch {
            throw PostgresStoreContext.storeError(error)
        }
    }

    /// A project from columns 0…3 (id, name, sender_id, created_at).
    static func project(_ row: PostgresRow) throws -> Project {
        let columns = row.makeRandomAccess()
        return Project(
            id: ProjectID(rawValue: try columns[0].decode(Int64.self)),
            name: try columns[1].decode(String.self),
            senderID: try columns[2].decode(Int64.self),
            createdAt: StoreContext.date(micros: try columns[3].decode(Int64.self))
        )
    }
}
