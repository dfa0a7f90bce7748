import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
import PushRelayCore

/// Runs statements on one connection so that none waits for ever once the connection is gone.
///
/// postgres-nio (1.33) writes a query to its channel without a write promise. Once the channel has closed, NIO has
/// removed the connection's handlers, and a query written then is dropped by the channel: nothing ever answers the
/// promise `PostgresConnection.query` awaits (vapor/postgres-nio#487 fixed this and was reverted, #501). A caller
/// that issues a statement just after PostgreSQL closed the connection (a `ROLLBACK` after `57P01 terminating
/// connection`, or the next statement of a transaction) thus waits for good, and closing the connection again does
/// not help: it is closed already.
///
/// Here a statement started on a closed connection fails at once, and one still unanswered when the connection closes
/// is given ``grace`` to end as it should (its answer may be on its way to its task), then fails as a lost connection.
/// postgres-nio's promise for it is left unanswered; it holds nothing but the statement.
final class PostgresConnectionWatch: Sendable {
    let connection: PostgresConnection
    private let state = NIOLockedValueBox(State())

    private struct State {
        var closed = false
        var nextStatement = 0
        var answered = 0
        var pending: [Int: EventLoopPromise<[PostgresRow]>] = [:]
    }

    /// How long a statement in flight when the connection closed may still take to end before it is abandoned.
    static let grace = Duration.seconds(1)

    /// Watches `connection` (call once per connection).
    init(connection: PostgresConnection) {
        self.connection = connection
        let state = self.state
        let eventLoop = connection.eventLoop
        connection.closeFuture.whenComplete { _ in
            state.withLockedValue { $0.closed = true }
            eventLoop.scheduleTask(in: TimeAmount(Self.grace)) {
                let abandoned = state.withLockedValue { state in
                    defer { state.pending.removeAll() }
                    return Array(state.pending.values)
                }
                for promise in abandoned {
                    promise.fail(StoreError.unavailable(
                        "the PostgreSQL connection closed before the statement was answered"))
                }
            }
        }
    }

    /// Statements PostgreSQL has answered on this connection (a writer's watchdog sees progress by it).
    var answered: Int { self.state.withLockedValue { $0.answered } }

    /// Runs `query`; with `collect`, returns its rows (else they are discarded).
    func rows(_ query: PostgresQuery, logger: Logger, collect: Bool) async throws -> [PostgresRow] {
        try await self.start(query, logger: logger, collect: collect).get()
    }

    /// Sends `query` now and returns its answer to come: statements started one after the other reach PostgreSQL
    /// in that order without waiting for each other's answers (a pipeline), and are answered in that order.
    func start(_ query: PostgresQuery, logger: Logger, collect: Bool) -> EventLoopFuture<[PostgresRow]> {
        let connection = self.connection
        let promise = connection.eventLoop.makePromise(of: [PostgresRow].self)
        let id = self.state.withLockedValue { state -> Int? in
            guard !state.closed, !connection.isClosed else { return nil }
            state.nextStatement += 1
            state.pending[state.nextStatement] = promise
            return state.nextStatement
        }
        guard let id else {
            promise.fail(StoreError.unavailable("the PostgreSQL connection is closed"))
            return promise.futureResult
        }
        // The future-returning `query` collects the rows on the connection's event loop and answers there: no
        // task per statement, whose start is one more hop through the cooperative pool for every statement.
        connection.query(query, logger: logger).whenComplete { result in
            self.state.withLockedValue { state in
                state.answered += 1
                return state.pending.removeValue(forKey: id)
            }?.completeWith(result.map { collect ? $0.rows : [] })
        }
        return promise.futureResult
    }
}
