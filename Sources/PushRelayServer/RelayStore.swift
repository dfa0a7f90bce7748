public import Logging
public import PushRelayStore
import Foundation
public import NIOCore
public import PushRelayCore

/// Opens the store the relay and the CLI use: SQLite in a data directory (the default) or PostgreSQL at a URL,
/// with the relay's condition compiler and queue limits.
public enum RelayStore {
    /// Which engine, and where.
    public enum Location: Sendable, Hashable {
        /// `pushrelay.sqlite` in this data directory.
        case sqlite(directory: String)
        /// A PostgreSQL database shared by every node (the URL is a secret: never log it unmasked).
        case postgres(url: String)

        /// The store the configuration names: SQLite in `data_dir` (the default) or PostgreSQL at `postgres_url`.
        public init(_ configuration: PushRelayConfiguration) {
            self = configuration.store == .postgres
                ? .postgres(url: configuration.postgresURL ?? "") : .sqlite(directory: configuration.dataDirectory)
        }
    }

    /// Opens the store. Throws ``StoreError``: ``StoreError/Code/notFound`` for a missing or empty SQLite store
    /// unless `createIfMissing` (`project create` and `store init` create one, `serve` only with `--init`; the
    /// directory too),
    /// ``StoreError/Code/corrupt`` for a damaged one, ``StoreError/Code/unavailable`` when PostgreSQL cannot be
    /// reached or the file cannot be opened, ``StoreError/Code/invalidArgument`` for a malformed URL.
    /// `readOnly` opens a SQLite store only to read it (``SQLiteStore/Configuration/readOnly``: a backup mounted
    /// read-only, a data directory this user may not write); it implies not `createIfMissing`. A PostgreSQL store
    /// opened read-only has its schema checked, never created or migrated (``PostgresStore/Configuration/readOnly``).
    /// `postgres`: PostgreSQL's timeouts and read pool (ignored for SQLite). `eventLoopGroup`: the loops PostgreSQL's
    /// connections run on (`event_loops`); nil: NIO's shared group. `commitEventLoop`: the loop a SQLite store
    /// commits on instead of its writer thread (`commit_on_event_loop`, ``SQLiteStore/Configuration/commitEventLoop``).
    /// `authRecheckInterval`: how often the credentials epoch is re-read (`auth_recheck_interval`); nil keeps the
    /// store's default.
    public static func open(
        _ location: Location,
        createIfMissing: Bool = true,
        queuePolicy: QueuePolicy = QueuePolicy(),
        readOnly: Bool = false,
        postgres: PostgresTuning = PostgresTuning(),
        eventLoopGroup: (any EventLoopGroup)? = nil,
        commitEventLoop: (any EventLoop)? = nil,
        authRecheckInterval: Duration? = nil,
        logger: Logger
    ) async throws -> any PushStore {
        switch location {
        case .sqlite(let directory):
            if createIfMissing && !readOnly {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            }
            var configuration = SQLiteStore.Configuration.relay(directory: directory)
            configuration.queuePolicy = queuePolicy
            configuration.createIfMissing = createIfMissing && !readOnly
            configuration.readOnly = readOnly
            configuration.commitEventLoop = commitEventLoop
            if let authRecheckInterval { configuration.authRecheckInterval = authRecheckInterval }
            return try SQLiteStore(configuration: configuration, logger: logger)
        case .postgres(let url):
            var configuration = PostgresStore.Configuration(url: try PostgresURL(url))
            configuration.conditionCompiler = SQLiteStore.Configuration.relayConditionCompiler
            configuration.queuePolicy = queuePolicy
            postgres.apply(to: &configuration)
            configuration.readOnly = readOnly
            configuration.eventLoopGroup = eventLoopGroup
            if let authRecheckInterval { configuration.authRecheckInterval = authRecheckInterval }
            return try await PostgresStore.open(configuration: configuration, logger: logger)
        }
    }

    /// The PostgreSQL store's timeouts and read pool, as configured (`postgres_commit_timeout`,
    /// `postgres_statement_timeout`, `postgres_connect_timeout`, `postgres_read_timeout`,
    /// `postgres_read_connections`); a nil field keeps ``PostgresStore/Configuration``'s default.
    public struct PostgresTuning: Sendable {
        /// ``PostgresStore/Configuration/commitTimeout``.
        public var commitTimeout: Duration?
        /// ``PostgresStore/Configuration/statementTimeout``.
        public var statementTimeout: Duration?
        /// ``PostgresStore/Configuration/connectTimeout``.
        public var connectTimeout: Duration?
        /// ``PostgresStore/Configuration/readTimeout``.
        public var readTimeout: Duration?
        /// ``PostgresStore/Configuration/readConnections``.
        public var readConnections: Int?

        /// Every field nil: the store's defaults.
        public init() {}

        /// The daemon's and the CLI's: every field from `configuration`.
        public init(_ configuration: PushRelayConfiguration) {
            self.commitTimeout = configuration.postgresCommitTimeout
            self.statementTimeout = configuration.postgresStatementTimeout
            self.connectTimeout = configuration.postgresConnectTimeout
            self.readTimeout = configuration.postgresReadTimeout
            self.readConnections = configuration.postgresReadConnections
        }

        func apply(to configuration: inout PostgresStore.Configuration) {
            if let commitTimeout { configuration.commitTimeout = commitTimeout }
            if let statementTimeout { configuration.statementTimeout = statementTimeout }
            if let connectTimeout { configuration.connectTimeout = connectTimeout }
            if let readTimeout { configuration.readTimeout = readTimeout }
            if let readConnections { configuration.readConnections = readConnections }
        }
    }
}
