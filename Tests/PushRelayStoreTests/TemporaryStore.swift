import Foundation
import NIOConcurrencyHelpers
import PushRelayCore
import TestSupport
@testable import PushRelayStore

/// A temporary directory removed at the end of `body`.
func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("pushrelay-store-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

/// A clock tests move by hand.
final class FakeClock: Sendable {
    private let now = NIOLockedValueBox(Date(timeIntervalSince1970: 1_700_000_000))

    var date: Date { self.now.withLockedValue { $0 } }

    func advance(by seconds: Double) {
        self.now.withLockedValue { $0 = $0.addingTimeInterval(seconds) }
    }
}

/// The engines every store suite runs against.
enum StoreKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    var description: String { self.rawValue }
}

/// The store settings tests change, for either engine.
struct StoreOptions {
    var maxTopicsPerDevice: Int?
    var conditionCompiler: (@Sendable (String) -> TopicConditionMatcher?)?
    var automaticFanOut: Bool?
    var fanOutBatchSize: Int?
    var authRecheckInterval: Duration?
    var authCacheEntries: Int?
    /// PostgreSQL only.
    var transientOrderTimeout: Duration?
    /// PostgreSQL only: the writer's deadlines.
    var commitTimeout: Duration?
    var statementTimeout: Duration?
    /// SQLite only (the PostgreSQL writer's queue is not bounded yet).
    var maxPendingWrites: Int?
    /// SQLite only (PostgreSQL finds expired messages by an index): rows per chunk and chunks per purge.
    var expirySweep: (chunkRows: Int, chunks: Int)?
}

/// A store with the writer hooks the suites use.
protocol TestStore: PushStore {
    func suspendWriter()
    func resumeWriter()
    var queuedWriteRequests: Int { get }
    func expandOneFanOutBatch() async throws -> Bool
    var groupCommitStatistics: GroupCommitStatistics { get }
}

extension SQLiteStore: TestStore {}
extension PostgresStore: TestStore {}

/// Opens a store of `kind` for `directory`, runs `body`, closes it. For PostgreSQL the directory names a database
/// of the shared test cluster (created at first use): opening it again, or twice at once, is the same database,
/// as a second node or a restarted one sees it.
func withStore<T>(
    _ kind: StoreKind,
    in directory: String,
    clock: FakeClock? = nil,
    configure: (inout StoreOptions) -> Void = { _ in },
    _ body: (any TestStore) async throws -> T
) async throws -> T {
    var options = StoreOptions()
    configure(&options)
    let store = try await openStore(kind, in: directory, clock: clock, options: options)
    do {
        let result = try await body(store)
        await store.close()
        return result
    } catch {
        await store.close()
        throw error
    }
}

/// Opens (without closing) a store of `kind` for `directory`.
func openStore(
    _ kind: StoreKind,
    in directory: String,
    clock: FakeClock? = nil,
    options: StoreOptions = StoreOptions()
) async throws -> any TestStore {
    switch kind {
    case .sqlite:
        var configuration = SQLiteStore.Configuration(directory: directory)
        if let clock { configuration.clock = { clock.date } }
        if let value = options.maxTopicsPerDevice { configuration.maxTopicsPerDevice = value }
        if let value = options.conditionCompiler { configuration.conditionCompiler = value }
        if let value = options.automaticFanOut { configuration.automaticFanOut = value }
        if let value = options.fanOutBatchSize { configuration.fanOutBatchSize = value }
        if let value = options.authRecheckInterval { configuration.authRecheckInterval = value }
        if let value = options.authCacheEntries { configuration.authCacheEntries = value }
        if let value = options.maxPendingWrites { configuration.maxPendingWrites = value }
        if let value = options.expirySweep {
            configuration.expirySweepChunkRows = value.chunkRows
            configuration.expirySweepChunks = value.chunks
        }
        return try SQLiteStore(configuration: configuration)
    case .postgres:
        let url = try await TestPostgres.shared.database(named: databaseName(for: directory))
        var configuration = PostgresStore.Configuration(url: try PostgresURL(url))
        configuration.readConnections = 2
        if let clock { configuration.clock = { clock.date } }
        if let value = options.maxTopicsPerDevice { configuration.maxTopicsPerDevice = value }
        if let value = options.conditionCompiler { configuration.conditionCompiler = value }
        if let value = options.automaticFanOut { configuration.automaticFanOut = value }
        if let value = options.fanOutBatchSize { configuration.fanOutBatchSize = value }
        if let value = options.authRecheckInterval { configuration.authRecheckInterval = value }
        if let value = options.authCacheEntries { configuration.authCacheEntries = value }
        if let value = options.transientOrderTimeout { configuration.transientOrderTimeout = value }
        if let value = options.commitTimeout { configuration.commitTimeout = value }
        if let value = options.statementTimeout { configuration.statementTimeout = value }
        return try await PostgresStore.open(configuration: configuration)
    }
}

/// The test database of a temporary directory.
func databaseName(for directory: String) -> String {
    let name = URL(fileURLWithPath: directory).lastPathComponent.lowercased()
    return "s_" + String(name.map { $0.isLetter || $0.isNumber ? $0 : "_" }.suffix(50))
}

/// Yields until `count` write requests wait in the suspended writer's queue (bounded: 100,000 yields, no clock);
/// whether they do.
@discardableResult
func waitUntilQueued(_ store: any TestStore, _ count: Int) async -> Bool {
    var spins = 0
    while store.queuedWriteRequests < count && spins < 100_000 {
        await Task.yield()
        spins += 1
    }
    return store.queuedWriteRequests >= count
}

/// A project with one device.
struct Fixture {
    var credentials: ProjectCredentials
    var registration: DeviceRegistration
    var project: ProjectID { self.credentials.project.id }
    var device: DeviceID { self.registration.device.id }
}

func makeFixture(_ store: any PushStore, name: String = "shop") async throws -> Fixture {
    let credentials = try await store.createProject(name: name)
    let registration = try await store.registerDevice(project: credentials.project.id, app: "com.shop", platform: "IOS")
    return Fixture(credentials: credentials, registration: registration)
}

extension Array where Element == UInt8 {
    init(text: String) { self = Array(text.utf8) }
}

/// A fake remote-commit observer that holds the store's notification reader in its first call with rows, as a slow
/// hand-over would, until ``release()``; every row it is handed (after the hold) is recorded in ``delivered``.
final class HeldNotificationReader: Sendable {
    private let holding = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)
    private let calls = NIOLockedValueBox(0)
    let delivered = NIOLockedValueBox<[MessageID]>([])

    /// The observer to set with `setRemoteCommitObserver`.
    func observe(_ commit: RemoteCommit) {
        guard case .rows(let rows) = commit else { return }
        if calls.withLockedValue({ $0 += 1; return $0 }) == 1 {
            holding.signal()
            _ = released.wait(timeout: .now() + 60)  // a bound against a hang, far past any test's own waits
        }
        delivered.withLockedValue { $0 += rows.map(\.id) }
    }

    /// Waits (at most 60 s, off the cooperative pool) until the reader is held; false if it never came.
    func waitUntilHeld() async -> Bool {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: self.holding.wait(timeout: .now() + 60) == .success) }
        }
    }

    func release() {
        released.signal()
    }
}

/// A `psql` session named `name` on `directory`'s test database that has sent `sql` (`BEGIN; …`) and now waits in its
/// open transaction, holding what it locked: once this returns, the locks are held. Send `ROLLBACK;` (or `COMMIT;`)
/// and `finish()` to let go. Throws when the session is not idle in its transaction within a minute.
func holdingSession(_ sql: String, name: String, in directory: String) async throws -> PSQLSession {
    let postgres = try await TestPostgres.shared
    let database = databaseName(for: directory)
    let session = try postgres.session(database: database, name: name)
    try session.send(sql)
    for _ in 0..<3_000 {
        let found = try await postgres.psql(
            """
            SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
                AND application_name = '\(name)' AND state = 'idle in transaction'
            """, database: database)
        if found.stdout.trimmingCharacters(in: .whitespacesAndNewlines) != "0" { return session }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw StoreError.unavailable("test: the session \(name) did not hold its transaction open within a minute")
}
