import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
import PushRelayCore

/// What the parts of a ``PostgresStore`` share: configuration, the node's identity, the id generator for
/// transient messages, the auth cache, the observers and the counters.
final class PostgresStoreContext: Sendable {
    let configuration: PostgresStore.Configuration
    let logger: Logger
    /// This process's random name in notifications (it ignores its own).
    let node: String
    let ids = NIOLockedValueBox(MessageIDGenerator(last: 0))
    let authCache: AuthCache
    /// Keeps time-to-live-0 messages behind the stored rows this node numbered before them.
    let deliveryOrder: PostgresDeliveryOrder
    let dropObserver = FunctionSlot<DroppedMessages, Void>()
    let remoteObserver = FunctionSlot<RemoteCommit, Void>()
    /// Which devices hold a stream on this node (``PushStore/setLocalStreams(_:)``); nil: every device.
    let localStreams = FunctionSlot<[DeviceID], [DeviceID]>()
    let statistics = NIOLockedValueBox(GroupCommitStatistics())
    /// Whether the writer's last transaction could commit.
    let health: CommitHealth
    /// Streams opened here and not yet announced to the other nodes.
    let announcements = PostgresStreamAnnouncements()
    /// Topics device expiry could not check for subscribers (``PostgresSkippedRows``).
    let skippedTopics = PostgresSkippedRows()
    /// Device groups device expiry could not check for members (``PostgresSkippedRows``).
    let skippedDeviceGroups = PostgresSkippedRows()

    /// The notification channel every node listens on.
    static let channel = "pushrelay_commits"

    init(configuration: PostgresStore.Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.node = String(UInt64.random(in: 1...UInt64.max), radix: 36)
        self.authCache = AuthCache(maxEntries: configuration.authCacheEntries)
        self.deliveryOrder = PostgresDeliveryOrder(timeout: configuration.transientOrderTimeout, loops: configuration.loops)
        self.health = CommitHealth(logger: logger)
    }

    /// Now, in microseconds since the Unix epoch, from the configured clock.
    var nowMicros: Int64 { StoreContext.micros(self.configuration.clock()) }

    /// A connection configuration for the URL: `synchronous_commit` forced on (a commit returns once the WAL is
    /// flushed), whatever the server's default.
    var connectionConfiguration: PostgresConnection.Configuration {
        let url = self.configuration.url
        var configuration: PostgresConnection.Configuration
        if let socket = url.socketPath {
            configuration = PostgresConnection.Configuration(
                unixSocketPath: socket, username: url.user, password: url.password, database: url.database)
        } else {
            configuration = PostgresConnection.Configuration(
                host: url.host ?? "localhost", port: url.port, username: url.user, password: url.password,
                database: url.database, tls: .disable)
        }
        configuration.options.connectTimeout = TimeAmount(self.configuration.connectTimeout)
        // A node frozen inside a transaction (SIGSTOP, a paused VM, a stalled host) keeps the rows it locked from
        // every other node until it runs again; its own deadlines cannot fire. PostgreSQL ends a session idle in a
        // transaction for `statementTimeout`, which the writer never is between two statements of a live write.
        configuration.options.additionalStartupParameters = [
            ("synchronous_commit", "on"), ("application_name", url.applicationName),
            ("idle_in_transaction_session_timeout",
             "\(PostgresStore.milliseconds(self.configuration.statementTimeout))"),
        ]
        return configuration
    }

    /// Opens one connection.
    func connect(id: Int) async throws(StoreError) -> PostgresConnection {
        do {
            return try await PostgresConnection.connect(
                on: self.configuration.loops.any(), configuration: self.connectionConfiguration, id: id,
                logger: self.logger)
        } catch {
            throw StoreError.unavailable("cannot connect to \(self.configuration.url): \(Self.describe(error))")
        }
    }

    /// The store error for an engine error: unique violations are `alreadyExists`, everything else (the server
    /// gone, a deadlock, a timeout) is `unavailable`: nothing was committed for the call.
    static func storeError(_ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] {
            if state == "23505" { return StoreError.alreadyExists(Self.describe(error)) }
            return StoreError.unavailable("PostgreSQL error \(state): \(Self.describe(error))")
        }
        return StoreError.unavailable("PostgreSQL: \(Self.describe(error))")
    }

    /// Whether the error means the connection is unusable (it must be replaced).
    static func isConnectionLost(_ error: any Error, connection: PostgresConnection) -> Bool {
        if connection.isClosed { return true }
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
            return true
        case .server:
            // A FATAL error ends the session: PostgreSQL closes the connection right after it (`57P01 terminating
            // connection due to administrator command` at a fast shutdown or `pg_terminate_backend`), maybe before
            // postgres-nio has seen the close. A `ROLLBACK` sent then may never be answered.
            let severity = error.serverInfo?[.severity] ?? error.serverInfo?[.localizedSeverity]
            let state = error.serverInfo?[.sqlState] ?? ""
            return severity == "FATAL" || severity == "PANIC" || state.hasPrefix("57P") || state.hasPrefix("08")
        default:
            return false
        }
    }

    /// A short text for an engine error (the server's message when there is one; never a bound value).
    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return message }
            return "\(error.code)"
        }
        return "\(error)"
    }
}
