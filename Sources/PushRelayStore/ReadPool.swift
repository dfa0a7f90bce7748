import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

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
    private let mode: SQLiteConnection.OpenMode
    /// For ``SQLiteConnection/OpenMode/immutable``: the database file as it was when the store was opened.
    private let unchanged: UnchangedFile?

    /// A pool of connections to `path`. `mode` ``SQLiteConnection/OpenMode/immutable`` needs `unchanged`: each read
    /// is refused, after it ran, if the file changed since (SQLite reads such a file without locks).
    init(
        path: String, busyTimeout: Duration, maxIdle: Int, mode: SQLiteConnection.OpenMode = .readWrite,
        unchanged: UnchangedFile? = nil
    ) {
        self.path = path
        self.busyTimeout = busyTimeout
        self.maxIdle = max(maxIdle, 1)
        self.mode = mode
        self.unchanged = unchanged
    }

    /// Runs `body` with a connection of the pool.
    func read<T>(_ body: (SQLiteConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        let box = try self.checkOut()
        let result: Result<T, StoreError>
        do {
            result = .success(try body(box.connection))
        } catch {
            if box.connection.inTransaction {
                try? box.connection.execute("ROLLBACK")
            }
            result = .failure(error)
        }
        self.checkIn(box)
        // A file that changed under an unlocked read explains whatever the read found (or failed on).
        try self.unchanged?.verify()
        return try result.get()
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
        let connection = try SQLiteConnection(path: self.path, busyTimeout: self.busyTimeout, mode: self.mode)
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

/// A database file that must not change while it is read as ``SQLiteConnection/OpenMode/immutable`` (SQLite then
/// takes no lock): its identity, size and modification time when the store was opened. Only a checkpoint of a
/// process that opened the store to write since (a daemon started meanwhile) changes the file; what it commits to
/// its write-ahead log first is simply not seen, as if the read had come just before.
struct UnchangedFile: Sendable, Equatable {
    let path: String
    private let device: UInt64
    private let inode: UInt64
    private let size: Int64
    private let modifiedSeconds: Int64
    private let modifiedNanoseconds: Int64

    /// The file at `path` as it is now; nil if it cannot be examined.
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.path = path
        self.device = UInt64(info.st_dev)
        self.inode = UInt64(info.st_ino)
        self.size = Int64(info.st_size)
        self.modifiedSeconds = Int64(info.st_mtim.tv_sec)
        self.modifiedNanoseconds = Int64(info.st_mtim.tv_nsec)
    }

    /// Throws ``StoreError/Code/unavailable`` when the file is not as it was.
    func verify() throws(StoreError) {
        guard UnchangedFile(path: self.path) == self else {
            throw StoreError.unavailable(
                "\(self.path) changed while it was read without its write-ahead log (a process opened the store to "
                    + "write meanwhile): run the command again")
        }
    }
}
