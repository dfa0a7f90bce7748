public import Foundation
public import NIOCore
public import PushRelayCore
import PostgresNIO

extension PostgresStore {
    /// How a ``PostgresStore`` connects and behaves. The queue and topic fields mean what they mean for
    /// ``SQLiteStore/Configuration``; every field has a default except the URL.
    public struct Configuration: Sendable {
        /// The database (created by the operator; the store creates and migrates its tables).
        public var url: PostgresURL
        /// Connections for reads (lookups, pending messages, statistics), besides the writer's and the
        /// listener's. Default 4.
        public var readConnections: Int = 4
        /// The event loops the connections run on; nil: postgres-nio's default (NIO's shared group). The daemon
        /// passes its own when `event_loops` is set, so that the store's connections share the relay's loops.
        public var eventLoopGroup: (any EventLoopGroup)?

        /// ``eventLoopGroup``, or postgres-nio's default: the loops every connection of the store runs on.
        var loops: any EventLoopGroup { eventLoopGroup ?? PostgresConnection.defaultEventLoopGroup }
        /// How long a connection attempt may take before ``StoreError/Code/unavailable``. Default 5 s.
        public var connectTimeout: Duration = .seconds(5)
        /// How long a read may take (PostgreSQL away, or not answering) before ``StoreError/Code/unavailable``,
        /// the wait for a pool connection included. Also the read pool's `statement_timeout`: PostgreSQL ends a
        /// statement given up on, and its connection comes back to the pool. Default 5 s.
        public var readTimeout: Duration = .seconds(5)
        /// How long a group of sends and acknowledgements may take to commit: past it the writer drops its
        /// connection (PostgreSQL stopped answering without closing it) and the group is answered
        /// ``StoreError/Code/unavailable``. Default 10 s.
        public var commitTimeout: Duration = .seconds(10)
        /// How long PostgreSQL may take to answer one statement of any other write (registrations, topics, key
        /// changes, purges, imports, topic fan-out steps): with no statement answered for this long (up to twice
        /// this), the writer drops its connection and the write is answered ``StoreError/Code/unavailable``. A
        /// long write that goes on being answered is not cut short. Also PostgreSQL's
        /// `idle_in_transaction_session_timeout` on the writer's connections: a node frozen inside a transaction
        /// loses its session, and its locks, after this long. Default 30 s.
        public var statementTimeout: Duration = .seconds(30)
        /// The per-device queue limits. Default FCM's: 100 non-collapsible, 4 collapse keys.
        public var queuePolicy: QueuePolicy = QueuePolicy()
        /// How long a `deleted_messages` marker stays pending. Default 4 weeks.
        public var deletedMessagesTimeToLive: Duration = .seconds(2_419_200)
        /// Devices expanded per transaction when a topic message fans out. Default 1000.
        public var fanOutBatchSize: Int = 1000
        /// How often a node looks for topic messages left unfinished by another node (one that died). Default 1 s.
        public var fanOutPollInterval: Duration = .seconds(1)
        /// How often the notification (`LISTEN`) connection is asked whether PostgreSQL still answers on it (within
        /// ``readTimeout``; unanswered, it is replaced). It only receives, so a connection cut without a FIN or RST
        /// would otherwise wait for notifications for ever. Default 10 s.
        public var listenerProbeInterval: Duration = .seconds(10)
        /// Topics one device may hold (FCM: 2000). Default 2000.
        public var maxTopicsPerDevice: Int = 2000
        /// How often the auth cache re-reads the auth epoch, in case a notification from another node was missed.
        /// Default 250 ms.
        public var authRecheckInterval: Duration = .milliseconds(250)
        /// Entries the auth cache holds (server keys, access tokens, projects, and devices by secret and by token:
        /// two a device that streams or acknowledges); when full it drops a thirty-second of its room from its largest
        /// tables.
        /// Default 500,000: room for `max_connections`' default of 200,000 devices, each by its secret and its token.
        public var authCacheEntries: Int = 500_000
        /// The longest a time-to-live-0 send waits for this node's earlier stored rows to reach its streams (the
        /// notification connection may be down; see ``PostgresDeliveryOrder``): then it goes anyway. Default 1 s.
        public var transientOrderTimeout: Duration = .seconds(1)
        /// Compiles a condition text into a matcher, or nil if it is malformed. Default: rejects every condition.
        public var conditionCompiler: @Sendable (String) -> TopicConditionMatcher? = { _ in nil }
        /// Makes tokens, secrets and keys. Default ``CredentialGenerator/default``.
        public var credentials: CredentialGenerator = .default
        /// The wall clock (expiry, ids, dates). Tests move it.
        public var clock: @Sendable () -> Date = { Date() }
        /// Opens the store only to read it (the CLI's listings): the schema is checked, never created or migrated
        /// (another release's nodes may be running on it), and no topic message is expanded. A database without the
        /// schema, or with another version of it, is refused with ``StoreError/Code/unavailable``. Default false.
        public var readOnly = false
        /// Whether the writer expands topic messages by itself (tests turn it off to stop mid-expansion; a read-only
        /// store does not).
        var automaticFanOut = true

        /// A configuration for the database at `url`.
        public init(url: PostgresURL) {
            self.url = url
        }
    }
}
