import Foundation
import TestSupport
import Testing
@testable import PushRelayStore

/// A store written by a newer PushRelay is refused as unusable by this build, not as damaged (audit-s: "corrupt",
/// exit 65, whose remedy is restoring a backup).
@Suite struct SchemaVersionTests {
    @Test(arguments: StoreKind.allCases) func newerSchemaIsNotCorrupt(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { _ in }
            switch kind {
            case .sqlite:
                let connection = try SQLiteConnection(path: directory + "/pushrelay.sqlite", busyTimeout: .seconds(5))
                try connection.execute("PRAGMA user_version = \(SQLiteSchema.version + 1)")
                connection.close()
            case .postgres:
                _ = try await TestPostgres.shared.psql(
                    "INSERT INTO pushrelay_migrations (version) VALUES (\(PostgresSchema.version + 1))",
                    database: databaseName(for: directory))
            }
            do {
                _ = try await withStore(kind, in: directory) { _ in Issue.record("a newer schema was opened") }
            } catch let error as StoreError {
                #expect(error.code == .unavailable)
                #expect(error.message.contains("newer than this PushRelay's"), "\(error.message)")
            }
        }
    }
}
