import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Notices that the store's files were taken from under the daemon: `pushrelay.sqlite` or its `-wal` removed or
/// replaced while the writer holds them open. SQLite goes on through its open descriptors without an error, so every
/// commit would still succeed — into a file no name reaches, lost at the next crash. The writer asks ``problem()``
/// before each group (a `stat` of both names at most once a second); once a problem is seen it stays: the writes of
/// this process cannot reach the files again, and the daemon must be restarted.
struct StoreFileWatch {
    private let databasePath: String
    private let walPath: String
    private let interval: Duration
    private var database: FileIdentity?
    private var wal: FileIdentity?
    private var lastCheck: ContinuousClock.Instant?
    private var found: StoreError?

    struct FileIdentity: Equatable {
        var device: UInt64
        var inode: UInt64
    }

    init(databasePath: String, interval: Duration = .seconds(1)) {
        self.databasePath = databasePath
        self.walPath = databasePath + "-wal"
        self.interval = interval
        self.database = Self.identity(of: databasePath)
    }

    /// The problem found, checking the files when the interval has passed since the last check.
    mutating func problem() -> StoreError? {
        if let found { return found }
        let now = ContinuousClock.now
        if let lastCheck, now - lastCheck < interval { return nil }
        lastCheck = now
        found = check()
        return found
    }

    /// Whether the problem is the WAL's alone (the database file is still the one open: what was committed can be
    /// checkpointed into it).
    var databaseIntact: Bool { database != nil && Self.identity(of: databasePath) == database }

    private mutating func check() -> StoreError? {
        let currentDatabase = Self.identity(of: databasePath)
        if database == nil { database = currentDatabase }
        if currentDatabase == nil || currentDatabase != database {
            return .unavailable(
                "the store file \(databasePath) was removed or replaced while the daemon runs; restart the daemon")
        }
        let currentWAL = Self.identity(of: walPath)
        switch (wal, currentWAL) {
        case (nil, let seen?):
            wal = seen  // SQLite made the WAL at the first transaction
        case (let known?, let seen) where seen != known:
            return .unavailable(
                "the store's WAL file \(walPath) was removed or replaced while the daemon runs; restart the daemon")
        default:
            break
        }
        return nil
    }

    static func identity(of path: String) -> FileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }
}
