public import Foundation

extension SQLiteStore {
    /// See ``PushStore/addServiceAccountKey(project:keyID:clientEmail:publicKeyPEM:)``.
    public func addServiceAccountKey(
        project name: String,
        keyID: String,
        clientEmail: String,
        publicKeyPEM: String
    ) async throws -> ServiceAccountKey {
        guard !keyID.isEmpty, keyID.utf8.count <= 128, !publicKeyPEM.isEmpty else {
            throw StoreError.invalidArgument("a key needs an id of 1 to 128 bytes and a public key")
        }
        return try await self.writer.write(isolated: true) { transaction in
            let connection = transaction.connection
            let select = try connection.statement("SELECT id FROM projects WHERE name = ?1")
            try select.bind(name, at: 1)
            guard try select.step() else { throw StoreError.notFound("no project named \(name)") }
            let project = ProjectID(rawValue: select.int64(0))
            try select.run()
            let exists = try connection.statement("SELECT 1 FROM service_account_keys WHERE key_id = ?1")
            try exists.bind(keyID, at: 1)
            if try exists.step() {
                try exists.run()
                throw StoreError.alreadyExists("a key with id \(keyID) exists")
            }
            let insert = try connection.statement(
                """
                INSERT INTO service_account_keys (key_id, project_id, client_email, public_key, created_at)
                VALUES (?1, ?2, ?3, ?4, ?5)
                """
            )
            try insert.bind(keyID, at: 1)
            try insert.bind(project.rawValue, at: 2)
            try insert.bind(clientEmail, at: 3)
            try insert.bind(publicKeyPEM, at: 4)
            try insert.bind(transaction.nowMicros, at: 5)
            try insert.run()
            return ServiceAccountKey(
                id: keyID, project: project, clientEmail: clientEmail, publicKeyPEM: publicKeyPEM,
                createdAt: StoreContext.date(micros: transaction.nowMicros))
        }
    }

    /// See ``PushStore/serviceAccountKeys(project:)``.
    public func serviceAccountKeys(project name: String) async throws -> [ServiceAccountKey] {
        try await self.readers.read { connection throws(StoreError) in
            let select = try connection.statement(
                """
                SELECT k.key_id, k.project_id, k.client_email, k.public_key, k.created_at, k.revoked_at
                FROM service_account_keys k JOIN projects p ON p.id = k.project_id
                WHERE p.name = ?1 ORDER BY k.created_at, k.key_id
                """
            )
            try select.bind(name, at: 1)
            var keys: [ServiceAccountKey] = []
            while try select.step() { keys.append(Self.serviceAccountKey(from: select)) }
            return keys
        }
    }

    /// See ``PushStore/serviceAccountKey(id:)``.
    public func serviceAccountKey(id: String) async throws -> ServiceAccountKey? {
        try await self.readers.read { connection throws(StoreError) -> ServiceAccountKey? in
            let select = try connection.statement(
                """
                SELECT key_id, project_id, client_email, public_key, created_at, revoked_at
                FROM service_account_keys WHERE key_id = ?1
                """
            )
            try select.bind(id, at: 1)
            guard try select.step() else { return nil }
            let key = Self.serviceAccountKey(from: select)
            try select.run()
            return key
        }
    }

    /// See ``PushStore/revokeServiceAccountKey(project:keyID:)``.
    public func revokeServiceAccountKey(project name: String, keyID: String) async throws -> Bool {
        try await self.writer.write(isolated: true) { transaction in
            let connection = transaction.connection
            let revoke = try connection.statement(
                """
                UPDATE service_account_keys SET revoked_at = ?3
                WHERE key_id = ?2 AND revoked_at IS NULL
                  AND project_id = (SELECT id FROM projects WHERE name = ?1)
                """
            )
            try revoke.bind(name, at: 1)
            try revoke.bind(keyID, at: 2)
            try revoke.bind(transaction.nowMicros, at: 3)
            try revoke.run()
            guard connection.changes > 0 else { return false }
            let tokens = try connection.statement("DELETE FROM access_tokens WHERE key_id = ?1")
            try tokens.bind(keyID, at: 1)
            try tokens.run()
            transaction.authChanged = true  // cached access tokens of the key go
            return true
        }
    }

    /// See ``PushStore/issueAccessToken(_:key:expiresAt:)``.
    public func issueAccessToken(_ token: String, key: ServiceAccountKey, expiresAt: Date) async throws {
        let hash = KeyHash(of: token)
        let expires = StoreContext.micros(expiresAt)
        try await self.writer.write(isolated: true) { transaction in
            // The key may have been revoked (or its project deleted) since the caller read it.
            let insert = try transaction.connection.statement(
                """
                INSERT INTO access_tokens (token_hash, key_id, project_id, expires_at)
                SELECT ?1, key_id, project_id, ?3 FROM service_account_keys WHERE key_id = ?2 AND revoked_at IS NULL
                """
            )
            try insert.bind(hash.bytes, at: 1)
            try insert.bind(key.id, at: 2)
            try insert.bind(expires, at: 3)
            try insert.run()
            guard transaction.connection.changes == 1 else {
                throw StoreError.notFound("the key \(key.id) is revoked")
            }
        }
    }

    /// See ``PushStore/authenticateAccessToken(_:)``.
    /// Cached like server keys (``AuthCache``): a revocation or a project deletion bumps the auth epoch.
    public func authenticateAccessToken(_ token: String) async throws -> Project? {
        try await self.authenticate(.accessToken, token)
    }

    /// A key from columns 0…5 (key_id, project_id, client_email, public_key, created_at, revoked_at).
    static func serviceAccountKey(from row: SQLiteStatement) -> ServiceAccountKey {
        ServiceAccountKey(
            id: row.text(0) ?? "",
            project: ProjectID(rawValue: row.int64(1)),
            clientEmail: row.text(2) ?? "",
            publicKeyPEM: row.text(3) ?? "",
            createdAt: StoreContext.date(micros: row.int64(4)),
            revokedAt: row.isNull(5) ? nil : StoreContext.date(micros: row.int64(5))
        )
    }
}
