import Foundation

extension SQLiteStore {
    /// See ``PushStore/createProject(name:)``.
    public func createProject(name: String) async throws -> ProjectCredentials {
        try ProjectName.validate(name)
        let credentials = self.context.configuration.credentials
        return try await self.writer.write(isolated: true) { transaction in
            let connection = transaction.connection
            let exists = try connection.statement("SELECT 1 FROM projects WHERE name = ?1")
            try exists.bind(name, at: 1)
            if try exists.step() {
                try exists.run()
                throw StoreError.alreadyExists("a project named \(name) exists")
            }
            var senderID: Int64
            var isTaken: Bool
            repeat {
                senderID = Int64.random(in: 10_000_000_000...99_999_999_999)
                let taken = try connection.statement("SELECT 1 FROM projects WHERE sender_id = ?1")
                try taken.bind(senderID, at: 1)
                isTaken = try taken.step()
            } while isTaken
            let serverKey = credentials.serverKey()
            let clientKey = credentials.clientKey()
            let insert = try connection.statement(
                """
                INSERT INTO projects (name, sender_id, client_key_hash, created_at) VALUES (?1, ?2, ?3, ?4)
                RETURNING id
                """
            )
            try insert.bind(name, at: 1)
            try insert.bind(senderID, at: 2)
            try insert.bind(KeyHash(of: clientKey).bytes, at: 3)
            try insert.bind(transaction.nowMicros, at: 4)
            _ = try insert.step()
            let id = ProjectID(rawValue: insert.int64(0))
            try insert.run()
            try Self.insertServerKey(serverKey, project: id, in: transaction)
            let project = Project(
                id: id, name: name, senderID: senderID, createdAt: StoreContext.date(micros: transaction.nowMicros)
            )
            return ProjectCredentials(project: project, serverKey: serverKey, clientKey: clientKey)
        }
    }

    private static func insertServerKey(
        _ key: String,
        project: ProjectID,
        in transaction: WriteTransaction
    ) throws(StoreError) {
        let insert = try transaction.connection.statement(
            "INSERT INTO server_keys (key_hash, project_id, created_at, valid_until) VALUES (?1, ?2, ?3, NULL)"
        )
        try insert.bind(KeyHash(of: key).bytes, at: 1)
        try insert.bind(project.rawValue, at: 2)
        try insert.bind(transaction.nowMicros, at: 3)
        try insert.run()
    }

    /// See ``PushStore/projects()``.
    public func projects() async throws -> [Project] {
        try await self.readers.read { connection throws(StoreError) in
            let select = try connection.statement(
                "SELECT id, name, sender_id, created_at FROM projects ORDER BY name"
            )
            var projects: [Project] = []
            while try select.step() {
                projects.append(Self.project(from: select))
            }
            return projects
        }
    }

    /// See ``PushStore/project(named:)``.
    public func project(named name: String) async throws -> Project? {
        try await self.readers.read { connection throws(StoreError) in
            let select = try connection.statement(
                "SELECT id, name, sender_id, created_at FROM projects WHERE name = ?1"
            )
            try select.bind(name, at: 1)
            guard try select.step() else { return nil }
            let project = Self.project(from: select)
            try select.run()
            return project
        }
    }

    /// See ``PushStore/project(id:)``.
    public func project(id: ProjectID) async throws -> Project? {
        try await withCheckedThrowingContinuation { continuation in
            self.project(id: id) { continuation.resume(with: $0) }
        }
    }

    /// See ``PushStore/project(id:completion:)``: from memory or one read (``cachedOrRead(memory:read:completion:)``).
    public func project(id: ProjectID, completion: @escaping @Sendable (Result<Project?, any Error>) -> Void) {
        // `memory` answers nil for "not in memory": a project found is wrapped once more (the answer itself is optional).
        self.cachedOrRead(memory: { $0.project(id).map(Optional.some) }, read: { connection, cache, generation throws(StoreError) in
            let select = try connection.statement(
                "SELECT id, name, sender_id, created_at FROM projects WHERE id = ?1"
            )
            try select.bind(id.rawValue, at: 1)
            guard try select.step() else { return nil }
            let project = Self.project(from: select)
            try select.run()
            cache.insertProject(project, generation: generation)
            return project
        }, completion: completion)
    }

    /// See ``PushStore/deleteProject(named:)``.
    public func deleteProject(named name: String) async throws -> Bool {
        try await self.writer.write(isolated: true) { transaction in
            let delete = try transaction.connection.statement("DELETE FROM projects WHERE name = ?1")
            try delete.bind(name, at: 1)
            try delete.run()
            let deleted = transaction.connection.changes > 0
            if deleted {
                transaction.authChanged = true
                transaction.discardQueueStates()
            }
            return deleted
        }
    }

    /// See ``PushStore/rotateServerKey(project:gracePeriod:)``.
    public func rotateServerKey(project name: String, gracePeriod: Duration) async throws -> String {
        let grace = max(StoreContext.micros(gracePeriod), 0)
        let credentials = self.context.configuration.credentials
        return try await self.writer.write(isolated: true) { transaction in
            let connection = transaction.connection
            let project = try Self.projectID(named: name, in: transaction)
            let graceEnd = StoreContext.saturatingSum(transaction.nowMicros, grace)
            let expire = try connection.statement(
                """
                UPDATE server_keys SET valid_until = ?2
                WHERE project_id = ?1 AND (valid_until IS NULL OR valid_until > ?2)
                """
            )
            try expire.bind(project.rawValue, at: 1)
            try expire.bind(graceEnd, at: 2)
            try expire.run()
            let key = credentials.serverKey()
            try Self.insertServerKey(key, project: project, in: transaction)
            transaction.authChanged = true
            return key
        }
    }

    /// See ``PushStore/revokePreviousServerKeys(project:)``.
    public func revokePreviousServerKeys(project name: String) async throws -> Int {
        try await self.writer.write(isolated: true) { transaction in
            let project = try Self.projectID(named: name, in: transaction)
            let revoke = try transaction.connection.statement(
                """
                UPDATE server_keys SET valid_until = ?2
                WHERE project_id = ?1 AND valid_until IS NOT NULL AND valid_until > ?2
                """
            )
            try revoke.bind(project.rawValue, at: 1)
            try revoke.bind(transaction.nowMicros, at: 2)
            try revoke.run()
            let revoked = transaction.connection.changes
            if revoked > 0 { transaction.authChanged = true }
            return revoked
        }
    }

    /// See ``PushStore/rotateClientKey(project:)``.
    public func rotateClientKey(project name: String) async throws -> String {
        let credentials = self.context.configuration.credentials
        return try await self.writer.write(isolated: true) { transaction in
            let project = try Self.projectID(named: name, in: transaction)
            let key = credentials.clientKey()
            let update = try transaction.connection.statement("UPDATE projects SET client_key_hash = ?2 WHERE id = ?1")
            try update.bind(project.rawValue, at: 1)
            try update.bind(KeyHash(of: key).bytes, at: 2)
            try update.run()
            return key
        }
    }

    /// The id of the project named `name`, or ``StoreError/Code/notFound``.
    private static func projectID(named name: String, in transaction: WriteTransaction) throws(StoreError) -> ProjectID {
        let select = try transaction.connection.statement("SELECT id FROM projects WHERE name = ?1")
        try select.bind(name, at: 1)
        guard try select.step() else {
            throw StoreError.notFound("no project named \(name)")
        }
        let project = ProjectID(rawValue: select.int64(0))
        try select.run()
        return project
    }

    /// See ``PushStore/authenticateServerKey(_:)``.
    public func authenticateServerKey(_ key: String) async throws -> Project? {
        try await self.authenticate(.serverKey, key)
    }

    /// The project of a server key or an access token: from memory, else its row (read on a reader thread), which
    /// the cache then keeps (``AuthCache/project(of:_:nowMicros:read:)``).
    func authenticate(_ credential: AuthCache.Credential, _ text: String) async throws -> Project? {
        let hash = KeyHash(of: text)
        try await self.refreshAuthCacheIfDue()
        // The project, the credential's hash and its end (NULL: none).
        let sql: StaticString =
            switch credential {
            case .serverKey:
                """
                SELECT p.id, p.name, p.sender_id, p.created_at, c.key_hash, c.valid_until
                FROM server_keys c JOIN projects p ON p.id = c.project_id WHERE c.key_hash = ?1
                """
            case .accessToken:
                """
                SELECT p.id, p.name, p.sender_id, p.created_at, c.token_hash, c.expires_at
                FROM access_tokens c JOIN projects p ON p.id = c.project_id WHERE c.token_hash = ?1
                """
            }
        return try await self.context.authCache.project(of: credential, hash, nowMicros: self.context.nowMicros) {
            try await self.readers.read { connection throws(StoreError) -> AuthCache.ServerKeyEntry? in
                let select = try connection.statement(sql)
                try select.bind(hash.bytes, at: 1)
                guard try select.step() else { return nil }
                let project = Self.project(from: select)
                let stored = select.blob(4)
                let end = select.isNull(5) ? nil : select.int64(5)
                try select.run()
                guard hash.matches(stored) else { return nil }
                return AuthCache.ServerKeyEntry(project: project, validUntil: end)
            }
        }
    }

    /// See ``PushStore/authenticateClientKey(_:project:)``.
    public func authenticateClientKey(_ key: String, project name: String) async throws -> Project? {
        let hash = KeyHash(of: key)
        return try await self.readers.read { connection throws(StoreError) -> Project? in
            let select = try connection.statement(
                "SELECT id, name, sender_id, created_at, client_key_hash FROM projects WHERE name = ?1"
            )
            try select.bind(name, at: 1)
            guard try select.step() else { return nil }
            let project = Self.project(from: select)
            let stored = select.blob(4)
            try select.run()
            return hash.matches(stored) ? project : nil
        }
    }

    /// Re-reads the auth epoch when due, so that changes made by another process clear the cache.
    func refreshAuthCacheIfDue() async throws(StoreError) {
        let cache = self.context.authCache
        guard cache.epochCheckDue(interval: self.context.configuration.authRecheckInterval) else { return }
        let epoch = try await self.readers.read { connection throws(StoreError) -> Int64 in
            try Self.authEpoch(connection)
        }
        cache.observe(epoch: epoch)
    }

    /// A look-up the authentication cache may answer, without a task: `memory` (nil: not in memory) answers at once
    /// unless the epoch is due for a check; else one job on a reader thread re-reads the epoch (when due), asks `memory` again, and
    /// otherwise runs `read`, which inserts what it found under the generation it is given (a look-up that raced
    /// with an invalidation does not fill the cache).
    func cachedOrRead<T: Sendable>(
        memory: @escaping @Sendable (AuthCache) -> T?,
        read: @escaping @Sendable (SQLiteConnection, AuthCache, _ generation: UInt64) throws(StoreError) -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        let cache = self.context.authCache
        let checkEpoch = cache.epochCheckDue(interval: self.context.configuration.authRecheckInterval)
        if !checkEpoch, let answer = memory(cache) {
            return completion(.success(answer))
        }
        self.readers.read({ connection throws(StoreError) -> T in
            if checkEpoch { cache.observe(epoch: try Self.authEpoch(connection)) }
            if let answer = memory(cache) { return answer }
            return try read(connection, cache, cache.generation)
        }, completion: { completion($0.mapError { $0 }) })
    }

    /// The database's authentication epoch (``AuthCache``).
    static func authEpoch(_ connection: SQLiteConnection) throws(StoreError) -> Int64 {
        let select = try connection.statement("SELECT value FROM meta WHERE key = 'auth_epoch'")
        _ = try select.step()
        let value = select.int64(0)
        try select.run()
        return value
    }

    /// A project from columns 0…3 (id, name, sender_id, created_at).
    static func project(from row: SQLiteStatement) -> Project {
        Project(
            id: ProjectID(rawValue: row.int64(0)),
            name: row.text(1) ?? "",
            senderID: row.int64(2),
            createdAt: StoreContext.date(micros: row.int64(3))
        )
    }
}
