public import Foundation
import NIOCore
import PostgresNIO

extension PostgresStore {
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
        return try await self.writer.write { write in
            guard let row = try await write.rows("SELECT id FROM projects WHERE name = \(name)").first else {
                throw StoreError.notFound("no project named \(name)")
            }
            let project = ProjectID(rawValue: try row.decode(Int64.self))
            guard try await write.rows("SELECT 1 FROM service_account_keys WHERE key_id = \(keyID)").isEmpty else {
                throw StoreError.alreadyExists("a key with id \(keyID) exists")
            }
            try await write.run(
                """
                INSERT INTO service_account_keys (key_id, project_id, client_email, public_key, created_at)
                VALUES (\(keyID), \(project.rawValue), \(clientEmail), \(publicKeyPEM), \(write.nowMicros))
                """
            )
            return ServiceAccountKey(
                id: keyID, project: project, clientEmail: clientEmail, publicKeyPEM: publicKeyPEM,
                createdAt: StoreContext.date(micros: write.nowMicros))
        }
    }

    /// See ``PushStore/serviceAccountKeys(project:)``.
    public func serviceAccountKeys(project name: String) async throws -> [ServiceAccountKey] {
        let rows = try await self.rows(
            """
            SELECT k.key_id, k.project_id, k.client_email, k.public_key, k.created_at, k.revoked_at
            FROM service_account_keys k JOIN projects p ON p.id = k.project_id
            WHERE p.name = \(name) ORDER BY k.created_at, k.key_id
            """
        )
        do { return try rows.map(Self.serviceAccountKey) } catch { throw PostgresStoreContext.storeError(error) }
    }

    /// See ``PushStore/serviceAccountKey(id:)``.
    public func serviceAccountKey(id: String) async throws -> ServiceAccountKey? {
        let rows = try await self.rows(
            """
            SELECT key_id, project_id, client_email, public_key, created_at, revoked_at
            FROM service_account_keys WHERE key_id = \(id)
            """
        )
        do { return try rows.first.map(Self.serviceAccountKey) } catch { throw PostgresStoreContext.storeError(error) }
    }

    /// See ``PushStore/revokeServiceAccountKey(project:keyID:)``.
    public func revokeServiceAccountKey(project name: String, keyID: String) async throws -> Bool {
        try await self.writer.write { write in
            let revoked = try await write.rows(
                """
                UPDATE service_account_keys SET revoked_at = \(write.nowMicros)
                WHERE key_id = \(keyID) AND revoked_at IS NULL
                  AND project_id = (SELECT id FROM projects WHERE name = \(name))
                RETURNING key_id
                """
            )
            guard !revoked.isEmpty else { return false }
            try await write.run("DELETE FROM access_tokens WHERE key_id = \(keyID)")
            write.authChanged = true  // every node's cached access tokens of the key go
            return true
        }
    }

    /// See ``PushStore/issueAccessToken(_:key:expiresAt:)``.
    public func issueAccessToken(_ token: String, key: ServiceAccountKey, expiresAt: Date) async throws {
        let hash = ByteBuffer(bytes: KeyHash(of: token).bytes)
        let expires = StoreContext.micros(expiresAt)
        let keyID = key.id
        try await self.writer.write { write in
            // The key may have been revoked (or its project deleted) since the caller read it.
            let inserted = try await write.rows(
                """
                INSERT INTO access_tokens (token_hash, key_id, project_id, expires_at)
                SELECT \(hash), key_id, project_id, \(expires) FROM service_account_keys
                WHERE key_id = \(keyID) AND revoked_at IS NULL
                RETURNING key_id
                """
            )
            guard inserted.count == 1 else { throw StoreError.notFound("the key \(keyID) is revoked") }
        }
    }

    /// See ``PushStore/authenticateAccessToken(_:)``. Cached like server keys (``AuthCache``): a revocation or a
    /// project deletion bumps the auth epoch and tells every node (`NOTIFY`).
    public func authenticateAccessToken(_ token: String) async throws -> Project? {
        try await self.authenticate(.accessToken, token)
    }

    /// See ``PushStore/cachedProject(accessToken:)``: from this node's cache, as ``cachedProject(serverKey:)``.
    public func cachedProject(accessToken token: String) -> Project? {
        self.context.authCache.cachedProject(
            accessToken: token, recheckInterval: self.context.configuration.authRecheckInterval,
            nowMicros: self.context.nowMicros)
    }

    /// A key from columns 0…5 (key_id, project_id, client_email, public_key, created_at, revoked_at).
    static func serviceAccountKey(_ row: PostgresRow) throws -> ServiceAccountKey {
        let (id, project, email, key, created, revoked) = try row.decode(
            (String, Int64, String, String, Int64, Int64?).self)
        return ServiceAccountKey(
            id: id, project: ProjectID(rawValue: project), clientEmail: email, publicKeyPEM: key,
            createdAt: StoreContext.date(micros: created), revokedAt: revoked.map { StoreContext.date(micros: $0) })
    }
}
