import Logging
import PostgresNIO

/// The PostgreSQL server process behind one of the writer's connections, named so that another connection can end
/// it: its process id, and its start (a process id is reused once its process has ended; the pair names one
/// backend only).
///
/// Closing a connection does not end its transaction. A backend waiting on a lock (a row another node's frozen
/// transaction holds, an operator's `LOCK TABLE`) notices that its client has gone only once it gets the lock, and
/// until then keeps every row its transaction had locked: the writer's next transaction, on a new connection, waits
/// behind it, is given up at its own deadline, and leaves one more such backend. The writer ends the backend of a
/// connection it gives up on (``terminate(client:timeout:logger:)``).
struct PostgresBackend: Sendable, Equatable {
    let pid: Int32
    /// `backend_start` in microseconds since 1970, as PostgreSQL computes it (the same expression both times).
    let start: Int64

    /// The backend of `watch`'s connection; unavailable (and the connection closed) when PostgreSQL does not say
    /// within `timeout`.
    static func of(
        _ watch: PostgresConnectionWatch, timeout: Duration, logger: Logger
    ) async throws(StoreError) -> PostgresBackend {
        do {
            return try await PostgresStore.race(timeout: timeout) {
                let rows = try await watch.rows(
                    """
                    SELECT pid, (extract(epoch FROM backend_start) * 1000000)::bigint FROM pg_stat_activity
                    WHERE pid = pg_backend_pid()
                    """, logger: logger, collect: true)
                guard let row = rows.first else {
                    throw StoreError.unavailable("PostgreSQL did not list the writer's own connection")
                }
                let (pid, start) = try row.decode((Int32, Int64).self)
                return PostgresBackend(pid: pid, start: start)
            }
        } catch {
            try? await watch.connection.close()
            throw PostgresStoreContext.storeError(error)
        }
    }

    /// Ends this backend, and so its transaction and its locks, through a connection of `client` (the read pool).
    /// Best effort: PostgreSQL may itself be what stopped answering. Returns whether it was ended.
    @discardableResult
    func terminate(client: PostgresClient, timeout: Duration, logger: Logger) async -> Bool {
        let (pid, start) = (self.pid, self.start)
        do {
            let ended = try await PostgresStore.race(timeout: timeout) {
                try await client.query(
                    """
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE pid = \(pid) AND (extract(epoch FROM backend_start) * 1000000)::bigint = \(start)
                    """, logger: logger
                ).collect().first?.decode(Bool.self) ?? false
            }
            logger.notice(
                ended
                    ? "ended the transaction of the PostgreSQL connection the writer gave up on"
                    : "the PostgreSQL connection the writer gave up on had ended already",
                metadata: ["relay.postgres.pid": "\(pid)"])
            return ended
        } catch {
            logger.warning(
                "could not end the transaction of the PostgreSQL connection the writer gave up on; it holds its locks until PostgreSQL notices the connection closed",
                metadata: ["relay.postgres.pid": "\(pid)", "relay.error": "\(error)"])
            return false
        }
    }
}
