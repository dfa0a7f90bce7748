import Foundation
import TestSupport
import Testing
@testable import PushRelayStore

/// Service-account keys and access tokens in the store, and the migration of a version-1 database (versions 2 and 3).
@Suite struct ServiceAccountStoreTests {
    @Test(arguments: StoreKind.allCases) func keysTokensRevocationAndExpiry(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            let clock = FakeClock()
            try await withStore(kind, in: directory, clock: clock) { store in
                _ = try await store.createProject(name: "shop")
                let first = try await store.addServiceAccountKey(
                    project: "shop", keyID: "k1", clientEmail: "a@shop", publicKeyPEM: "PEM1")
                _ = try await store.addServiceAccountKey(project: "shop", keyID: "k2", clientEmail: "a@shop", publicKeyPEM: "PEM2")
                await #expect(throws: StoreError.self) {
                    try await store.addServiceAccountKey(project: "shop", keyID: "k1", clientEmail: "a@shop", publicKeyPEM: "x")
                }
                await #expect(throws: StoreError.self) {
                    try await store.addServiceAccountKey(project: "nope", keyID: "k3", clientEmail: "a@x", publicKeyPEM: "x")
                }
                #expect(try await store.serviceAccountKeys(project: "shop").map(\.id) == ["k1", "k2"])
                #expect(try await store.serviceAccountKey(id: "k1")?.publicKeyPEM == "PEM1")

                try await store.issueAccessToken(
                    "token-1", key: first, expiresAt: clock.date.addingTimeInterval(3600))
                #expect(try await store.authenticateAccessToken("token-1")?.name == "shop")
                #expect(try await store.authenticateAccessToken("token-2") == nil)
                clock.advance(by: 3601)
                #expect(try await store.authenticateAccessToken("token-1") == nil)

                try await store.issueAccessToken(
                    "token-3", key: first, expiresAt: clock.date.addingTimeInterval(3600))
                #expect(try await store.authenticateAccessToken("token-3")?.name == "shop")  // now cached
                #expect(try await store.revokeServiceAccountKey(project: "shop", keyID: "k1"))
                #expect(try await store.authenticateAccessToken("token-3") == nil)
                #expect(try await !store.revokeServiceAccountKey(project: "shop", keyID: "k1"))
                #expect(try await store.serviceAccountKey(id: "k1")?.revokedAt != nil)
                await #expect(throws: StoreError.self) {
                    try await store.issueAccessToken("token-4", key: first, expiresAt: clock.date.addingTimeInterval(60))
                }
            }
            // Nothing of a token in clear in the database.
            let bytes: Data
            switch kind {
            case .sqlite: bytes = try Data(contentsOf: URL(fileURLWithPath: directory + "/pushrelay.sqlite"))
            case .postgres: bytes = Data(try await TestPostgres.shared.dump(database: databaseName(for: directory)).utf8)
            }
            #expect(bytes.range(of: Data("token-3".utf8)) == nil)
        }
    }

    /// PostgreSQL caches access tokens like server keys, so a revocation on one node must reach the others: it bumps
    /// the auth epoch and notifies them. (Without that, another node would go on accepting the revoked key's tokens
    /// from its cache until they expired.)
    @Test("PostgreSQL: a key revoked on one node refuses its tokens on another that had them in memory")
    func revocationReachesOtherNodes() async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(.postgres, in: directory) { first in
                // An hour between epoch checks: what it holds stays usable, and only the notification can tell it.
                var options = StoreOptions()
                options.authRecheckInterval = .seconds(3600)
                let second = try #require(try await openStore(.postgres, in: directory, options: options) as? PostgresStore)
                _ = try await first.createProject(name: "shop")
                let key = try await first.addServiceAccountKey(
                    project: "shop", keyID: "k1", clientEmail: "a@shop", publicKeyPEM: "PEM1")
                try await first.issueAccessToken("token-1", key: key, expiresAt: Date().addingTimeInterval(3600))
                #expect(try await second.authenticateAccessToken("token-1")?.name == "shop")
                #expect(second.cachedProject(accessToken: "token-1")?.name == "shop", "held in the second node's memory")
                #expect(try await first.revokeServiceAccountKey(project: "shop", keyID: "k1"))
                var refused = false
                for _ in 0..<100 where !refused {
                    refused = try await second.authenticateAccessToken("token-1") == nil
                    if !refused { try await Task.sleep(for: .milliseconds(50)) }
                }
                #expect(refused, "the second node still accepted the revoked key's token after 5 s")
                #expect(second.cachedProject(accessToken: "token-1") == nil)
                await second.close()
            }
        }
    }

    @Test(arguments: StoreKind.allCases) func aVersion1DatabaseIsMigrated(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let shop = try await store.createProject(name: "shop")
                for _ in 0..<2 { _ = try await store.registerDevice(project: shop.project.id, app: "a", platform: "IOS") }
            }
            // Back to the version-1 schema, as a database of an earlier release (every later version undone).
            switch kind {
            case .sqlite:
                let connection = try SQLiteConnection(path: directory + "/pushrelay.sqlite", busyTimeout: .seconds(5))
                try connection.execute(
                    """
                    DROP TABLE device_group_members; DROP TABLE device_groups;
                    ALTER TABLE topic_messages DROP COLUMN restricted_package_name;
                    CREATE INDEX messages_expiry ON messages (expires_at);
                    DROP INDEX devices_last_seen; ALTER TABLE devices DROP COLUMN last_seen_at;
                    ALTER TABLE projects DROP COLUMN device_count;
                    DROP TABLE access_tokens; DROP TABLE service_account_keys; PRAGMA user_version = 1;
                    """)
                connection.close()
            case .postgres:
                let result = try await TestPostgres.shared.psql(
                    "DROP TABLE device_group_members; DROP TABLE device_groups; "
                        + "ALTER TABLE subscriptions DROP COLUMN created_xid; ALTER TABLE topic_messages DROP COLUMN visible; "
                        + "ALTER TABLE topic_messages DROP COLUMN restricted_package_name; "
                        + "DROP FUNCTION pushrelay_lock_queues; ALTER TABLE devices DROP COLUMN last_seen_at; ALTER TABLE projects DROP COLUMN device_count; "
                        + "DROP TABLE access_tokens; DROP TABLE service_account_keys; "
                        + "DELETE FROM pushrelay_migrations WHERE version >= 2;",
                    database: databaseName(for: directory))
                #expect(result.status == 0, "\(result.stderr)")
            }
            try await withStore(kind, in: directory) { store in
                #expect(try await store.project(named: "shop") != nil)
                let key = try await store.addServiceAccountKey(
                    project: "shop", keyID: "k1", clientEmail: "a@shop", publicKeyPEM: "PEM")
                try await store.issueAccessToken("t", key: key, expiresAt: Date().addingTimeInterval(60))
                #expect(try await store.authenticateAccessToken("t")?.name == "shop")
                // Version 3: the devices registered before are counted, and count as seen at the migration.
                let shop = try #require(try await store.project(named: "shop"))
                _ = try await store.registerDevice(project: shop.id, app: "a", platform: "IOS", deviceLimit: 3)
                await #expect(throws: StoreError.self) {
                    try await store.registerDevice(project: shop.id, app: "a", platform: "IOS", deviceLimit: 3)
                }
                #expect(try await store.expireDevices(unseenFor: .seconds(3600), limit: 100) == 0)
            }
            switch kind {
            case .sqlite:
                let reopened = try SQLiteConnection(path: directory + "/pushrelay.sqlite", busyTimeout: .seconds(5))
                let version = try reopened.statement("PRAGMA user_version")
                _ = try version.step()
                #expect(version.int64(0) == SQLiteSchema.version)
                try version.run()
                // Version 4: no index on messages.expires_at (the purge sweeps the table instead).
                let index = try reopened.statement("SELECT count(*) FROM sqlite_master WHERE name = 'messages_expiry'")
                _ = try index.step()
                #expect(index.int64(0) == 0)
                try index.run()
                reopened.close()
            case .postgres:
                let result = try await TestPostgres.shared.psql(
                    "SELECT max(version) FROM pushrelay_migrations", database: databaseName(for: directory))
                #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(PostgresSchema.version)")
            }
        }
    }
}
