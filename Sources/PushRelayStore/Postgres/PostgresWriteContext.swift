import Logging
import PostgresNIO

/// One write transaction of the PostgreSQL writer, as a request sees it: the connection inside `BEGIN … COMMIT`,
/// one clock reading, and what to do after the commit.
final class PostgresWriteContext: @unchecked Sendable {
    /// The writer's connection, through which every statement goes (none waits for ever).
    let watch: PostgresConnectionWatch
    let logger: Logger
    let nowMicros: Int64
    /// Set by writes that can turn an auth-cache hit into a miss: the epoch is bumped and every node told.
    var authChanged = false
    /// Devices removed by an unregistration: the epoch is bumped and every node's cache drops just these (unless
    /// ``authChanged`` is set too, which clears everything).
    var evictedDevices: [(device: Device, secret: KeyHash)] = []
    /// Set when a topic message was committed: the writer starts expanding it.
    var topicMessageAdded = false
    /// Rows appended to device queues (for the commit observer and the notification).
    var appended: [StoredMessage] = []
    /// How many of ``appended`` the transaction's statements have already announced with `NOTIFY`.
    var announced = 0
    /// Unexpired messages removed undelivered (for the drop observer).
    var dropped = DroppedMessages()
    /// Set by the store's write probe; see ``provesCapacity``.
    var isProbe = false
    /// Whether this commit shows the store can take messages again (see ``CommitHealth``): it stored messages, or
    /// it was the probe.
    var provesCapacity: Bool { self.isProbe || !self.appended.isEmpty }

    init(watch: PostgresConnectionWatch, logger: Logger, nowMicros: Int64) {
        self.watch = watch
        self.logger = logger
        self.nowMicros = nowMicros
    }

    /// The connection (tests).
    var connection: PostgresConnection { self.watch.connection }

    /// Runs a statement, discarding its rows.
    func run(_ query: PostgresQuery) async throws {
        _ = try await self.watch.rows(query, logger: self.logger, collect: false)
    }

    /// Runs a query and returns its rows.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await self.watch.rows(query, logger: self.logger, collect: true)
    }
}
