import Foundation
import NIOConcurrencyHelpers
import PostgresNIO
import PushRelayCore
import TestSupport
import Testing
@testable import PushRelayStore

/// The PostgreSQL writer never waits for ever (audit-s: after PostgreSQL was stopped under load, a node's writer hung
/// for good, `/readyz` stayed 200 and SIGTERM crashed the daemon). postgres-nio drops a query written to a connection
/// that has closed, and its caller waits for good; the writer issued one after `57P01 terminating connection` (its
/// `ROLLBACK`), or whenever the connection closed between two statements. Each test gives the writer its chance
/// within a safety time far above its deadlines; a writer that does not answer fails the test, and the store is then
/// left open (closing it would wait on the stuck writer).
@Suite("Store: PostgreSQL writer deadlines", .serialized)
struct PostgresWriterDeadlineTests {
    @Test("a connection closed between two statements of a write: the write is answered Unavailable, the next commits")
    func connectionClosedBetweenStatements() async throws {
        try await withTemporaryDirectory { directory in
            let store = try #require(try await openStore(.postgres, in: directory) as? PostgresStore)
            let project = try await store.createProject(name: "shop").project.id
            let device = try await store.registerDevice(project: project, app: "a", platform: "IOS").device

            // The connection closes after the body's statement; `COMMIT` comes next on it.
            let closed = await outcome(within: .seconds(60)) {
                try await store.writer.write { write in
                    try await write.run("SELECT 1")
                    try await write.connection.close()
                }
            }
            guard let closed else {
                Issue.record("the writer never answered a write whose connection closed between two statements")
                return
            }
            #expect(throws: StoreError.self) { try closed.get() }
            #expect(store.commitFailure != nil, "/readyz fails while the writer cannot commit")

            // A new connection: sends commit again, and the store closes.
            let again = await outcome(within: .seconds(60)) {
                try await store.enqueue([NewMessage(device: device.id, body: [1])])
            }
            #expect(again.map { result in (try? result.get()).map(Self.stored) == true } == true, "\(String(describing: again))")
            #expect(store.commitFailure == nil)
            await store.close()
        }
    }

    @Test("the writer's backend terminated while its group waits for a lock: answered Unavailable, then commits again")
    func backendTerminatedMidTransaction() async throws {
        try await withTemporaryDirectory { directory in
            let options = StoreOptions(commitTimeout: .seconds(5))
            let store = try #require(try await openStore(.postgres, in: directory, options: options) as? PostgresStore)
            let project = try await store.createProject(name: "shop").project.id
            let device = try await store.registerDevice(project: project, app: "a", platform: "IOS").device
            let postgres = try await TestPostgres.shared
            let database = databaseName(for: directory)
            for round in 0..<6 {
                // Another session holds the device's row: the group's `pushrelay_lock_queues` waits for it.
                let held = try postgres.session(database: database, name: "held_device")
                try held.send("BEGIN; SELECT id FROM devices WHERE id = \(device.id.rawValue) FOR UPDATE;")
                #expect(try await postgres.waitForActivity(database: database, "application_name = 'held_device' AND state = 'idle in transaction'"))
                let send = Task {
                    await outcome(within: .seconds(60)) {
                        try await store.enqueue([NewMessage(device: device.id, body: [UInt8(round)])])
                    }
                }
                #expect(try await postgres.waitForActivity(database: database, "application_name = 'pushrelay' AND wait_event_type = 'Lock'"))
                let terminated = try await postgres.psql(
                    """
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE application_name = 'pushrelay' AND wait_event_type = 'Lock' AND datname = current_database()
                    """, database: database)
                #expect(terminated.status == 0, "\(terminated.combined)")
                let answer = await send.value
                try held.send("ROLLBACK;")
                _ = await held.finish()
                guard let answer else {
                    Issue.record("round \(round): the writer never answered the group whose backend was terminated")
                    return
                }
                #expect(throws: StoreError.self, "round \(round)") { try answer.get() }

                let again = await outcome(within: .seconds(60)) {
                    try await store.enqueue([NewMessage(device: device.id, body: [UInt8(round)])])
                }
                guard let again else {
                    Issue.record("round \(round): the writer never answered the send after the termination")
                    return
                }
                #expect((try? again.get()).map(Self.stored) == true, "round \(round): \(again)")
                #expect(store.commitFailure == nil, "round \(round)")
            }
            await store.close()
        }
    }

    @Test("a write whose statement is not answered within the statement timeout is answered Unavailable")
    func statementTimeout() async throws {
        try await Self.whileDeviceRowHeld(StoreOptions(statementTimeout: .seconds(1))) { store, device in
            // An isolated write (not a group of sends) waiting for the held row.
            try await store.writer.write { write in
                try await write.run("SELECT id FROM devices WHERE id = \(device.rawValue) FOR UPDATE")
            }
        } then: { store, _ in
            let again = await outcome(within: .seconds(60)) { try await store.probeCommit() }
            #expect(again.map { (try? $0.get()) != nil } == true, "\(String(describing: again))")
        }
    }

    @Test("a group of sends not committed within the commit timeout is answered Unavailable, then commits again")
    func commitTimeout() async throws {
        try await Self.whileDeviceRowHeld(StoreOptions(commitTimeout: .seconds(1))) { store, device in
            // The group's `pushrelay_lock_queues` waits for the held row: the deadline drops the connection under it.
            try await store.enqueue([NewMessage(device: device, body: [1])])
        } then: { store, device in
            let again = await outcome(within: .seconds(60)) {
                try await store.enqueue([NewMessage(device: device, body: [2])])
            }
            #expect(again.map { (try? $0.get()).map(Self.stored) == true } == true, "\(String(describing: again))")
        }
    }

    /// The two deadlines of the writer: a group of sends (`postgres_commit_timeout`), another write
    /// (`postgres_statement_timeout`).
    enum WriterDeadline: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case commit, statement
        var testDescription: String { rawValue }
    }

    /// A write given up at its deadline must not leave its transaction behind. Dropping the connection does not end
    /// it: a backend waiting on a lock notices its client gone only once it gets the lock, and until then keeps the
    /// rows it already locked. Here the write locks device `a`, then waits for `b`, held by another session; after
    /// the deadline, a write to `a` alone must commit while `b` is still held (it waited behind the abandoned
    /// transaction, and was given up in turn, one abandoned transaction after the other).
    @Test("a write given up at its deadline releases the rows it locked: a write to its other device commits while the held one stays held",
          arguments: WriterDeadline.allCases)
    func abandonedWriteReleasesItsLocks(_ deadline: WriterDeadline) async throws {
        try await withTemporaryDirectory { directory in
            let options = deadline == .commit
                ? StoreOptions(commitTimeout: .seconds(2)) : StoreOptions(statementTimeout: .seconds(2))
            let store = try #require(try await openStore(.postgres, in: directory, options: options) as? PostgresStore)
            let project = try await store.createProject(name: "shop").project.id
            let a = try await store.registerDevice(project: project, app: "a", platform: "IOS").device.id
            let b = try await store.registerDevice(project: project, app: "a", platform: "IOS").device.id
            #expect(a.rawValue < b.rawValue, "the writes lock their devices in the order of their ids")
            @Sendable func write(_ devices: [DeviceID], _ byte: UInt8) async throws -> Bool {
                switch deadline {
                case .commit:
                    return Self.stored(try await store.enqueue(devices.map { NewMessage(device: $0, body: [byte]) }))
                case .statement:
                    // An isolated write (a registration, a topic change) that locks the devices, in id order.
                    let ids = devices.map(\.rawValue)
                    try await store.writer.write { write in
                        try await write.run("SELECT id FROM devices WHERE id = ANY(\(ids)::bigint[]) ORDER BY id FOR UPDATE")
                    }
                    return true
                }
            }
            let postgres = try await TestPostgres.shared
            let database = databaseName(for: directory)
            let held = try postgres.session(database: database, name: "held_device")
            try held.send("BEGIN; SELECT id FROM devices WHERE id = \(b.rawValue) FOR UPDATE;")
            #expect(try await postgres.waitForActivity(
                database: database, "application_name = 'held_device' AND state = 'idle in transaction'"))

            let abandoned = await outcome(within: .seconds(60)) { try await write([a, b], 1) }
            #expect(abandoned.map { (try? $0.get()) == nil } == true, "\(String(describing: abandoned))")
            for round in 0..<2 {
                let alone = await outcome(within: .seconds(60)) { try await write([a], 2) }
                #expect(alone.map { (try? $0.get()) == true } == true, "round \(round): \(String(describing: alone))")
            }
            #expect(try await postgres.waitForActivity(
                database: database, "application_name = 'held_device' AND state = 'idle in transaction'"),
                "the other session let go of the row before the writes")
            try held.send("ROLLBACK;")
            _ = await held.finish()
            let after = await outcome(within: .seconds(60)) { try await write([b], 3) }
            #expect(after.map { (try? $0.get()) == true } == true, "\(String(describing: after))")
            await store.close()
        }
    }

    /// Another session holds a device's row while `blocked` runs on a store opened with `options`: `blocked` must be
    /// answered with a ``StoreError`` while the row is still held (so by its deadline, not by the release); then,
    /// the row released, `then` checks that the store works again.
    private static func whileDeviceRowHeld<T: Sendable>(
        _ options: StoreOptions,
        blocked: @escaping @Sendable (PostgresStore, DeviceID) async throws -> T,
        then: (PostgresStore, DeviceID) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { directory in
            let store = try #require(try await openStore(.postgres, in: directory, options: options) as? PostgresStore)
            let project = try await store.createProject(name: "shop").project.id
            let device = try await store.registerDevice(project: project, app: "a", platform: "IOS").device.id
            let postgres = try await TestPostgres.shared
            let database = databaseName(for: directory)
            let held = try postgres.session(database: database, name: "held_device")
            try held.send("BEGIN; SELECT id FROM devices WHERE id = \(device.rawValue) FOR UPDATE;")
            #expect(try await postgres.waitForActivity(database: database, "application_name = 'held_device' AND state = 'idle in transaction'"))

            let answer = await outcome(within: .seconds(60)) { try await blocked(store, device) }
            let stillHeld = try await postgres.waitForActivity(database: database, "application_name = 'held_device'")
            try held.send("ROLLBACK;")
            _ = await held.finish()
            guard let answer else {
                Issue.record("the write waited past its deadline")
                return
            }
            #expect(stillHeld, "answered while the row was still held, so by the deadline")
            #expect(throws: StoreError.self) { try answer.get() }
            try await then(store, device)
            await store.close()
        }
    }

    private static func stored(_ results: [EnqueueResult]) -> Bool {
        if case .stored = results.first { return true }
        return false
    }
}

/// `body`'s outcome, or nil when it has none after `limit` (the body is then left running).
private func outcome<T: Sendable>(
    within limit: Duration, _ body: @escaping @Sendable () async throws -> T
) async -> Result<T, any Error>? {
    let waiting = NIOLockedValueBox<CheckedContinuation<Result<T, any Error>?, Never>?>(nil)
    let timer = NIOLockedValueBox<Task<Void, Never>?>(nil)
    return await withCheckedContinuation { continuation in
        waiting.withLockedValue { $0 = continuation }
        let finish = { @Sendable (result: Result<T, any Error>?) in
            waiting.withLockedValue { waiting in
                defer { waiting = nil }
                return waiting
            }?.resume(returning: result)
            timer.withLockedValue { $0 }?.cancel()
        }
        timer.withLockedValue {
            $0 = Task {
                guard (try? await Task.sleep(for: limit)) != nil else { return }
                finish(nil)
            }
        }
        Task {
            do { finish(.success(try await body())) } catch { finish(.failure(error)) }
        }
    }
}
