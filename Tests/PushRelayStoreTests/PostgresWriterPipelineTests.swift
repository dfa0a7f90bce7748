import Foundation
import PushRelayCore
import TestSupport
import Testing
@testable import PushRelayStore

/// The PostgreSQL writer sends a group's last statement and its `COMMIT` together, without waiting in between
/// (`PostgresWriteContext.rowsThenCommit`). A statement that fails must then leave nothing of the group committed
/// (PostgreSQL answers that `COMMIT` with a rollback), its callers must get the error, and the connection must be
/// out of the transaction for the next group.
@Suite("Store: PostgreSQL writer pipeline", .serialized)
struct PostgresWriterPipelineTests {
    @Test("a group whose write fails commits nothing of it: the message it would have replaced stays, the next group commits")
    func failedWriteCommitsNothing() async throws {
        try await withTemporaryDirectory { directory in
            let store = try #require(try await openStore(.postgres, in: directory) as? PostgresStore)
            let project = try await store.createProject(name: "shop").project.id
            let device = try await store.registerDevice(project: project, app: "a", platform: "IOS").device
            let postgres = try await TestPostgres.shared
            let database = databaseName(for: directory)
            // Inserting a body of one 0xFF byte fails the statement, after its deletions ran.
            let trigger = try await postgres.psql(
                """
                CREATE FUNCTION refuse_ff() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF NEW.body = '\\xff'::bytea THEN RAISE EXCEPTION 'refused by the test'; END IF;
                    RETURN NEW;
                END $$;
                CREATE TRIGGER refuse_ff BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION refuse_ff();
                """, database: database)
            #expect(trigger.status == 0, "\(trigger.combined)")

            let first = try await store.enqueue([NewMessage(device: device.id, body: [1], collapseKey: "k")])
            guard case .stored(let kept) = first.first else {
                Issue.record("the first send was not stored: \(first)")
                return
            }
            // Same collapse key: the group deletes the first row, then its insertion fails.
            await #expect(throws: (any Error).self) {
                try await store.enqueue([NewMessage(device: device.id, body: [0xFF], collapseKey: "k")])
            }
            let pending = try await store.pendingMessages(for: device.id, after: nil, limit: 10)
            #expect(pending.map(\.id) == [kept], "the replaced row must stay: \(pending.map(\.id))")

            let next = try await store.enqueue([NewMessage(device: device.id, body: [2], collapseKey: "k")])
            guard case .stored(let replacement) = next.first else {
                Issue.record("the send after the failed group was not stored: \(next)")
                return
            }
            let after = try await store.pendingMessages(for: device.id, after: nil, limit: 10)
            #expect(after.map(\.id) == [replacement])
            #expect(after.first?.body == [2])
            await store.close()
        }
    }
}
