import Foundation
import TestSupport
import Testing

@testable import PushRelayStore

/// A PostgreSQL read given up at its deadline gives its connection back to the pool. postgres-nio abandons a
/// cancelled query on the client's side only (no cancel request reaches PostgreSQL), so a read waiting on a lock
/// kept its connection for as long as the lock was held: with a one-connection pool, every later read failed, even
/// of tables nobody had locked, and in a daemon the statistics read every `metrics_interval` took the connections
/// of a larger pool one by one. PostgreSQL now ends each statement of the pool at the read timeout
/// (`statement_timeout`).
@Suite("PostgreSQL read connections after a deadline")
struct PostgresReadStatementTimeoutTests {
    @Test("with one read connection, reads of an unlocked table go on while the devices table stays locked")
    func timedOutReadFreesItsConnection() async throws {
        try await withTemporaryDirectory { directory in
            let postgres = try await TestPostgres.shared
            let database = databaseName(for: directory)
            // Created and filled through the test's usual store, then opened with one read connection.
            try await withStore(.postgres, in: directory) { store in
                let project = try await store.createProject(name: "shop").project.id
                _ = try await store.registerDevice(project: project, app: "a", platform: "IOS")
            }
            var configuration = PostgresStore.Configuration(
                url: try PostgresURL(try await postgres.database(named: database)))
            configuration.readConnections = 1
            // Long enough for a read on a loaded host (the full suite runs beside it), short for the test.
            configuration.readTimeout = .seconds(4)
            let store = try await PostgresStore.open(configuration: configuration)

            let held = try postgres.session(database: database, name: "held_devices")
            try held.send("BEGIN; LOCK TABLE devices IN ACCESS EXCLUSIVE MODE;")
            #expect(try await postgres.waitForActivity(
                database: database, "application_name = 'held_devices' AND state = 'idle in transaction'"))
            for round in 0..<2 {
                // Counts the devices: waits on the lock and is given up at the deadline.
                let error = await #expect(throws: StoreError.self, "round \(round)") {
                    try await store.queueStatistics()
                }
                #expect(error?.code == .unavailable, "round \(round)")
                // The projects are not locked: read on the pool's one connection, once PostgreSQL has ended the
                // statement that waited (before, this waited for the connection and was given up too).
                #expect((try? await store.projects())?.map(\.name) == ["shop"], "round \(round)")
            }
            #expect(try await postgres.waitForActivity(
                database: database, "application_name = 'held_devices' AND state = 'idle in transaction'"),
                "the lock was let go before the reads")
            try held.send("ROLLBACK;")
            _ = await held.finish()
            #expect(try await store.queueStatistics().devices == 1)
            await store.close()
        }
    }

    @Test("the statement timeout is the read timeout in whole milliseconds, rounded up, never 0")
    func milliseconds() {
        #expect(PostgresStore.milliseconds(.seconds(5)) == 5_000)
        #expect(PostgresStore.milliseconds(.milliseconds(1_500)) == 1_500)
        #expect(PostgresStore.milliseconds(.microseconds(1_500)) == 2)
        #expect(PostgresStore.milliseconds(.nanoseconds(1)) == 1)
        #expect(PostgresStore.milliseconds(.zero) == 1)
        #expect(PostgresStore.milliseconds(.seconds(86_400 * 365)) == 31_536_000_000)
    }
}
