public import Foundation
public import PushRelayCore
public import NIOCore

extension SQLiteStore {
    /// How a ``SQLiteStore`` opens and behaves. Every field has a default except the database path.
    public struct Configuration: Sendable {
        /// The database file (`-wal` and `-shm` files sit beside it).
        public var path: String
        /// Whether a missing or empty database file is created. When false, opening one throws
        /// ``StoreError/Code/notFound``: a daemon whose data disk is not mounted, or whose store was deleted, stops
        /// with a clear error instead of serving an empty store that has forgotten every device. Default true (the
        /// daemon sets it from `serve --init`).
        public var createIfMissing = true
        /// Whether the store is opened only to be read (`pushrelay project list` and the CLI's other listings): on
        /// a backup mounted read-only, or by an operator who may read the data directory but not write it. Nothing
        /// is written to the store's files, no file is created, the store is never migrated, and every write throws
        /// ``StoreError/Code/unavailable`` at once. A store that a process has open (its `-wal` and `-shm` exist) is
        /// read through them, seeing what it committed; a closed one (no write-ahead log) is read as an unchanging
        /// file, and a read during which the file changed (a daemon started and checkpointed meanwhile) throws
        /// ``StoreError/Code/unavailable``. Opening throws ``StoreError/Code/unavailable`` when a write-ahead log
        /// holds changes that cannot be read without writing (its `-shm` missing or unreadable, and not creatable),
        /// or when the store's schema is older than this version's (it migrates only when opened to write).
        /// Implies not ``createIfMissing``. Default false.
        public var readOnly = false
        /// Whether an existing database is checked with `PRAGMA quick_check` when opened; a damaged one throws
        /// ``StoreError/Code/corrupt`` naming the first problem. It reads the whole file once (about a second per
        /// gigabyte). Default true.
        public var checkIntegrityAtOpen = true
        /// How long a connection waits for a lock held by another process (e.g. the CLI) before
        /// ``StoreError/Code/unavailable``. Default 5 s.
        public var busyTimeout: Duration = .seconds(5)
        /// Read connections kept open when idle. Default 8.
        public var maxIdleReadConnections: Int = 8
        /// Threads that run the reads (`store-reader`), started as reads need them: how many reads can wait for the
        /// disk or a lock at once. Each costs about 2 MB once it has run (its connection, its allocator caches, its
        /// stack): 8 raised the memory the relay benchmark counts per idle device from 5.7 to 6.5 kB. Default one
        /// per core, at least 2 — as many as Swift's cooperative pool, where the reads ran before.
        public var readThreads: Int = Self.coresOrTwo

        /// One per core, at least 2: read once (`System.coreCount` reads the cgroup's files at every call, and a
        /// configuration is made for every store opened).
        private static let coresOrTwo = max(2, System.coreCount)
        /// The per-device queue limits. Default FCM's: 100 non-collapsible, 4 collapse keys.
        public var queuePolicy: QueuePolicy = QueuePolicy()
        /// How long a `deleted_messages` marker stays pending. Default 4 weeks.
        public var deletedMessagesTimeToLive: Duration = .seconds(2_419_200)
        /// Devices expanded per transaction when a topic message fans out. Default 1000.
        public var fanOutBatchSize: Int = 1000
        /// Topics one device may hold (FCM: 2000). Default 2000.
        public var maxTopicsPerDevice: Int = 2000
        /// How often the auth cache re-reads the database's auth epoch to notice changes made by another process
        /// (a project deleted or a key rotated by the CLI). Default 250 ms.
        public var authRecheckInterval: Duration = .milliseconds(250)
        /// Entries the auth cache holds (server keys, access tokens, projects, and devices by secret and by token:
        /// two a device that streams or acknowledges); when full it drops a thirty-second of its room from its largest
        /// tables.
        /// Default 500,000: room for `max_connections`' default of 200,000 devices, each by its secret and its token.
        public var authCacheEntries: Int = 500_000
        /// Write requests that may wait for the writer; past it a write fails at once with
        /// ``StoreError/Code/unavailable`` (the relay answers `Unavailable` with `Retry-After`) instead of queueing
        /// without bound behind a slow disk. Default 65,536.
        public var maxPendingWrites: Int = 65_536
        /// The longest the writer waits, once it has a request, for more before it commits (they would otherwise
        /// miss this fsync and wait for the next one): it waits for as many as the largest of its last 32 groups,
        /// at most the last commit's duration, and never more than this (`GroupGather`). Zero commits at once.
        /// Default 1 ms.
        public var maxGroupGather: Duration = .milliseconds(1)
        /// The event loop the writer's groups run on, instead of a thread of its own (the daemon's
        /// `commit_on_event_loop`). A send served on that loop is then parsed, committed, answered and delivered to
        /// the streams of that loop without waking another thread (less CPU per message and a quicker answer at
        /// moderate rates: docs/benchmarks.md), but the loop blocks for every commit's fsync and for a lock another
        /// process holds (up to ``busyTimeout``), and so does every connection on it; writes from other threads wake
        /// it. It must keep running until ``SQLiteStore/close()`` returned. Default nil: the writer thread.
        public var commitEventLoop: (any EventLoop)? = nil
        /// Compiles a condition text (`'a' in topics && 'b' in topics`) into a matcher, or nil if it is malformed.
        /// The relay sets it from the core's condition parser. Default: rejects every condition.
        public var conditionCompiler: @Sendable (String) -> TopicConditionMatcher? = { _ in nil }
        /// Makes tokens, secrets and keys. Default ``CredentialGenerator/default``.
        public var credentials: CredentialGenerator = .default
        /// The wall clock (expiry, ids, dates). Tests move it.
        public var clock: @Sendable () -> Date = { Date() }
        /// Whether the writer expands topic messages by itself, new ones and those a previous run left unfinished
        /// (a daemon does). `false` for a store opened only to be read whole (`pushrelay store migrate`: the
        /// unfinished expansions are copied as they are and nothing is written to the store), and in tests that
        /// stop mid-expansion. Default true.
        public var automaticFanOut = true
        /// Rows of the `messages` table one write request of the expiry sweep examines (``ExpirySweep``): reading
        /// them takes under a millisecond of the writer's time; deleting costs ≈ 17 µs per expired row (35 ms for a
        /// chunk that has all expired, where the old purge deleted up to 10,000 rows in one request). Tests make it
        /// small.
        var expirySweepChunkRows = 2_000
        /// Chunks one ``SQLiteStore/purge(limit:)`` examines at most: with `expirySweepChunkRows`, 200,000 rows per
        /// purge.
        var expirySweepChunks = 100

        /// A configuration for the database file at `path`.
        public init(path: String) {
            self.path = path
        }

        /// A configuration for `pushrelay.sqlite` in the data directory `directory` (which must exist).
        public init(directory: String) {
            self.path = directory.hasSuffix("/") ? directory + "pushrelay.sqlite" : directory + "/pushrelay.sqlite"
        }
    }
}
