import NIOConcurrencyHelpers

/// Read-only connections for lookups and queue reads. WAL lets them read while the writer commits. A read runs on
/// the calling thread (it is short: an index lookup or one device's queue page); connections are reused from an idle
/// list, and one is opened when none is idle.
final class ReadPool: Sendable {
    private final class Box: @unchecked Sendable {
        let connection: SQLiteConnection
        init(_ connection: SQLiteConnection) { self.connection = connection }
    }

    private struct State: Sendable {
        var idle: [Box] = []
        var closed = false
    }

    private let state = NIOLockedValueBox(State())
    private let path: String
    private let busyTimeout: Duration
    private let maxIdle: Int

    init(path: String, busyTimeout: Duration, maxIdle: Int) {
        self.path = path
        self.busyTimeout = busyTimeout
        self.maxIdle = max(maxIdle, 1)
    }

    /// Runs `body` with a connection of the pool.
    func read<T>(_ body: (SQLiteConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        let box = try self.checkOut()
        do {
            let result = try body(box.connection)
            self.checkIn(box)
            return result
        } catch {
            if box.connection.inTransaction {
                try? box.connection.execute("ROLLBACK")
            }
            self.checkIn(box)
            throw error
        }
    }

    /// Closes the idle connections; later reads throw ``StoreError/closed``.
    func close() {
        let boxes = self.state.withLockedValue { state in
            state.closed = true
            defer { state.idle.removeAll() }
            return state.idle
        }
        for box in boxes {
            box.connection.close()
        }
    }

    private func checkOut() throws(StoreError) -> Box {
        let taken: Box?? = self.state.withLockedValue { state in
            if state.closed { return .none }
            return .some(state.idle.popLast())
        }
        guard let taken else { throw StoreError.closed }
        if let box = taken {
            return box
        }
        let connection = try SQLiteConnection(path: self.path, busyTimeout: self.busyTimeout)
        try connection.execute(SQLiteSchema.connectionPragmas(writer: false))
        return Box(connection)
    }

    private func checkIn(_ box: Box) {
        let keep = self.state.withLockedValue { state in
            guard !state.closed, state.idle.count < self.maxIdle else { return false }
            state.idle.append(box)
            return true
        }
        if !keep {
            box.connection.close()
        }
    }
}
