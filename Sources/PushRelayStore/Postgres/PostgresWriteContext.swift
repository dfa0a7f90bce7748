import Logging
import NIOCore
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

    /// `BEGIN`, sent without waiting for its answer (``beginPipelined()``): the next statement checks it.
    private var begin: EventLoopFuture<[PostgresRow]>?
    /// `COMMIT`, sent right behind the transaction's last statement (``rowsThenCommit(_:)``).
    private(set) var commit: (answer: EventLoopFuture<[PostgresRow]>, sent: ContinuousClock.Instant)?

    /// Sends `BEGIN` without waiting for its answer: the transaction's first statement follows it on the wire, and
    /// PostgreSQL answers both in one round trip. The next statement's caller gets `BEGIN`'s failure, if any, before
    /// its own answer.
    ///
    /// Only for transactions whose first statement changes nothing that a failed `BEGIN` would leave committed (it
    /// fails only with its connection, and every later statement then fails too).
    func beginPipelined() {
        self.begin = self.watch.start("BEGIN", logger: self.logger, collect: false)
    }

    /// Runs a statement, discarding its rows.
    func run(_ query: PostgresQuery) async throws {
        _ = try await self.answer(self.watch.start(query, logger: self.logger, collect: false))
    }

    /// Runs a query and returns its rows.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await self.answer(self.watch.start(query, logger: self.logger, collect: true))
    }

    /// Runs the transaction's last statement with `COMMIT` sent right behind it, in one round trip, and returns the
    /// statement's rows; the writer then awaits the commit (``commit``) instead of sending one. Should the statement
    /// fail, PostgreSQL answers that `COMMIT` by rolling the transaction back.
    func rowsThenCommit(_ query: PostgresQuery) async throws -> [PostgresRow] {
        let statement = self.watch.start(query, logger: self.logger, collect: true)
        self.commit = (self.watch.start("COMMIT", logger: self.logger, collect: false), ContinuousClock.now)
        return try await self.answer(statement)
    }

    /// `statement`'s rows, once a pipelined `BEGIN` sent before it has succeeded.
    private func answer(_ statement: EventLoopFuture<[PostgresRow]>) async throws -> [PostgresRow] {
        if let begin = self.begin {
            self.begin = nil
            _ = try await begin.get()
        }
        return try await statement.get()
    }
}
