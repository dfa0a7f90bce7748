#if canImport(Glibc)
import Glibc
#endif

/// Everything the daemon reads at start: listeners, TLS files, the store, timers, limits, logging, metrics.
///
/// Built by ``ConfigurationLoader`` from defaults, a config file, `PUSHRELAY_<FIELD>` environment variables and
/// command-line flags (later ones win). Every stored property has a matching ``ConfigurationField`` case that names
/// its file key, environment variable and flag; `docs/operations.md` documents each one.
public struct PushRelayConfiguration: Sendable, Equatable {
    /// Cleartext listen addresses (HTTP/1.1 and HTTP/2 prior knowledge). Key `listen`.
    /// Default `127.0.0.1:8080`: put a reverse proxy or `listen_tls` in front for anything public.
    public var listen: [ListenAddress]

    /// TLS listen addresses (ALPN `h2` or `http/1.1`). Key `listen_tls`. Default: none.
    /// When not empty, ``tlsCertificatePath`` and ``tlsKeyPath`` are required.
    public var listenTLS: [ListenAddress]

    /// PEM certificate chain for the TLS listeners, leaf first. Key `tls_certificate`. Default: none.
    public var tlsCertificatePath: String?

    /// PEM private key for the TLS listeners. Key `tls_key`. Default: none. The path is not a secret; the file is.
    public var tlsKeyPath: String?

    /// Directory of the SQLite database and its WAL. Key `data_dir`.
    /// Default: `$STATE_DIRECTORY` (set by systemd's `StateDirectory=`), else `/var/lib/pushrelay`.
    public var dataDirectory: String

    /// Which store engine holds the queues. Key `store`. Default ``StoreKind/sqlite``.
    public var store: StoreKind

    /// PostgreSQL connection URL for `store = postgres`. Key `postgres_url`. Secret: printed masked.
    public var postgresURL: String?

    /// With `store = postgres`: how long a group of sends and acknowledgements may take to commit before the writer
    /// drops its connection (PostgreSQL stopped answering without closing it, or the group waits on a row another
    /// session holds) and the group is answered `Unavailable`. Key `postgres_commit_timeout`. Default 10 s
    /// (`PostgresStore.Configuration.commitTimeout`).
    public var postgresCommitTimeout: Duration

    /// With `store = postgres`: how long PostgreSQL may answer none of the statements of any other write
    /// (registrations, topics, key changes, purges, topic fan-out steps) before the writer drops its connection and
    /// the write is answered `Unavailable` (noticed after up to twice this; a long write whose statements go on being
    /// answered is not cut short). Not PostgreSQL's own `statement_timeout`; its `idle_in_transaction_session_timeout`
    /// on the writer's connections (a node frozen inside a transaction loses it, and its locks, after this long).
    /// Key `postgres_statement_timeout`. Default 30 s (`PostgresStore.Configuration.statementTimeout`).
    public var postgresStatementTimeout: Duration

    /// With `store = postgres`: how long opening a connection may take, from the TCP connect to the end of the
    /// login (a server that accepts and then says nothing counts), before the attempt fails: at start the daemon
    /// exits (status 69), later the request that needed the connection is answered `Unavailable` and the connection
    /// is tried again. Every connection: the writer's, the listener's, the read pool's, the CLI's. Key
    /// `postgres_connect_timeout`. Default 5 s (`PostgresStore.Configuration.connectTimeout`).
    public var postgresConnectTimeout: Duration

    /// With `store = postgres`: how long a read (a token or credential look-up, a listing, the pending messages of
    /// a stream) may wait, for a connection of the pool and for PostgreSQL's answer, before the request is answered
    /// `Unavailable`. Key `postgres_read_timeout`. Default 5 s (`PostgresStore.Configuration.readTimeout`).
    public var postgresReadTimeout: Duration

    /// With `store = postgres`: the connections of the read pool (opened when needed), besides the writer's and
    /// the listener's: how many reads run at once; more wait for one (within ``postgresReadTimeout``). Key
    /// `postgres_read_connections`, 1 to 1024. Default 4 (`PostgresStore.Configuration.readConnections`).
    public var postgresReadConnections: Int

    /// Interval of the heartbeat comment on an idle device stream. Key `heartbeat_interval`. Default 25 s.
    public var heartbeatInterval: Duration

    /// A connection with no open stream and no request for this long is closed. Key `idle_timeout`. Default 120 s.
    public var idleTimeout: Duration

    /// Largest request body accepted on `/fcm/send` and `/gcm/send` (1000 tokens plus a 4 KiB payload fit).
    /// Key `max_send_body_size`. Default 512 KiB.
    public var maxSendBodySize: Int

    /// Largest request body on every other route (register, ack, Instance ID batches). Key `max_request_body_size`.
    /// Default 256 KiB.
    public var maxRequestBodySize: Int
    /// Request-body bytes the server holds at once over all its HTTP/2 connections: past it, no connection's
    /// flow-control window is reopened (clients stop sending) until requests finish; each connection also holds at
    /// most 1 MiB beyond the one request it may always finish. Key `max_buffered_body_size`.
    public var maxBufferedBodySize: Int

    /// Pending non-collapsible messages per device before they are dropped and the device is told
    /// (`deleted_messages`). Key `max_pending_messages`. Default 100, as FCM.
    public var maxPendingMessages: Int

    /// Distinct collapse keys kept pending per device. Key `max_collapse_keys`. Default 4, as FCM.
    public var maxCollapseKeys: Int

    /// How often expired messages and dead registrations are purged from the store. Key `purge_interval`.
    /// Default 60 s.
    public var purgeInterval: Duration

    /// After a server key is rotated, the old key is still accepted for this long. Key `server_key_rotation_grace`.
    /// Default 24 h.
    public var serverKeyRotationGrace: Duration

    /// How often, at most, the daemon re-reads the store's credentials epoch (`auth_epoch`), which every change to
    /// a project, a server key, a service account or a device's registration moves: a change made by another
    /// process (the CLI on this store; on PostgreSQL also a node whose notification was missed) is honoured within
    /// this interval. Between two checks, credentials and tokens already looked up are answered from memory. `0`:
    /// the epoch is re-read for every request that would be answered from memory (a database read each: strict,
    /// and slower). Changes this daemon makes itself take effect at once whatever the interval. Key
    /// `auth_recheck_interval`. Default 250 ms.
    public var authRecheckInterval: Duration

    /// Lowest level logged. Key `log_level`. Default ``LogLevel/info``. Reloaded on SIGHUP.
    public var logLevel: LogLevel

    /// Shape of a log line. Key `log_format`. Default ``LogFormat/text`` (journald adds the timestamp).
    public var logFormat: LogFormat

    /// Whether `/metrics` is served. Key `metrics_enabled`. Default `true`.
    public var metricsEnabled: Bool

    /// How often the store's figures behind `/metrics` (queue depth) and `/readyz` (store readable) are refreshed;
    /// neither route reads the store per request. Key `metrics_interval`. Default 10 s.
    public var metricsInterval: Duration

    /// On SIGTERM, how long in-flight sends and commits may take before the daemon closes anyway.
    /// Key `shutdown_drain_timeout`. Default 20 s; keep it below the unit's `TimeoutStopSec=` (30 s).
    public var shutdownDrainTimeout: Duration

    /// Connections accepted at once, over all listeners; beyond it new ones are closed at accept.
    /// Key `max_connections`. Default 200 000, lowered to the process's open-file limit minus
    /// ``reservedDescriptors`` when that is lower; a value set above it is kept and warned about.
    public var maxConnections: Int
    /// Most connections open at once from one IP address; a new one beyond it is closed at accept. `0`: no limit.
    /// Key `max_connections_per_address`. Default 0 (devices behind one carrier NAT share an address).
    public var maxConnectionsPerAddress: Int
    /// The event loops (threads) that serve the connections, each connection on one of them (PostgreSQL's too);
    /// `0`: one per CPU core (NIO's shared group). Fewer loops than cores spend less CPU per message at moderate rates (the store's writer
    /// wakes fewer threads, deliveries cross fewer of them) and reach a lower peak. Key `event_loops`. Default 0.
    public var eventLoops: Int
    /// Whether the SQLite store's commits run on the daemon's one event loop instead of a writer thread of its own
    /// (needs ``eventLoops`` 1 and the SQLite store). A send is then read, committed, answered and delivered by
    /// one thread with no wake-up between threads: less CPU per message and a quicker answer at moderate rates, but
    /// the loop, and every connection on it, waits for each commit's fsync and for a write lock the CLI holds, and
    /// the peak is lower (docs/operations.md). Key `commit_on_event_loop`. Default false.
    public var commitOnEventLoop: Bool
    /// A request must have arrived whole this long after its head began: the HTTP/1.1 body after its head (else
    /// `408`), an HTTP/2 stream's headers and body after its first HEADERS frame (else RST_STREAM `CANCEL`).
    /// Key `request_timeout`. Default 30 s.
    public var requestTimeout: Duration
    /// Messages one device may be sent per minute: a burst of this many, refilled at this rate; beyond it the
    /// recipient answers `DeviceMessageRateExceeded` (v1: `429 QUOTA_EXCEEDED`) and nothing is stored. `0`: no
    /// limit. Key `device_message_rate`. Default 240 (FCM's published per-device rate).
    public var deviceMessageRate: Int
    /// Messages one topic (or condition text) of a project may be sent per minute, the same way; beyond it the send
    /// answers `TopicsMessageRateExceeded` (v1: `429 QUOTA_EXCEEDED`). `0`: no limit. Key `topic_message_rate`.
    /// Default 600.
    public var topicMessageRate: Int
    /// Messages one project may send per minute over all its server keys and service accounts, one per recipient
    /// (one for a topic or condition): a burst of this many, refilled at this rate; beyond it the whole send
    /// answers `429 QuotaExceeded` (v1: `429 QUOTA_EXCEEDED`) with `Retry-After` and nothing is stored. `0`: no
    /// limit. Key `project_message_rate`. Default 600,000 (FCM's HTTP v1 project quota).
    public var projectMessageRate: Int
    /// Devices one project may register per minute (its client key ships in every app): a burst of this many,
    /// refilled at this rate; beyond it `POST /v1/register` answers `429 RESOURCE_EXHAUSTED` with `Retry-After`
    /// and registers nothing. `0`: no limit. Key `registration_rate`. Default 6000 (100 a second, sustained).
    public var registrationRate: Int
    /// Devices one IP address may register per minute, the same way, across projects. `0`: no limit. Key
    /// `registration_rate_per_address`. Default 300 (a carrier NAT shares an address: keep it well above one
    /// person's installs).
    public var registrationRatePerAddress: Int
    /// Devices one project may have registered at once; past it `POST /v1/register` answers
    /// `429 RESOURCE_EXHAUSTED` (no `Retry-After`: it frees up only as devices unregister or expire). `0`: no limit.
    /// Key `max_devices_per_project`. Default 1,000,000.
    public var maxDevicesPerProject: Int
    /// Devices neither streaming nor acknowledging for this long are removed, as FCM drops tokens unused for 270
    /// days: later sends to them answer `NotRegistered`. `nil` (`0` in the file): kept forever. Key `device_expiry`.
    /// Default 270 days.
    public var deviceExpiry: Duration?

    /// Web origins (`https://shop.example.com`, `http://localhost:3000`, or `*` for any) that may call the device
    /// routes from a browser: CORS preflight and `Access-Control-Allow-Origin` on `/v1/register`, `/v1/stream`,
    /// `/v1/ack` and `/v1/stream-ticket`. Key `cors_allowed_origins`. Default none: browsers on other origins are
    /// refused.
    public var corsAllowedOrigins: [String]

    /// The base URL senders reach this relay at, without a trailing `/`: service-account files name
    /// `<public_url>/token` as their `token_uri`, and `/token` accepts only JWTs with that audience. Key `public_url`.
    /// Default: none, derived from the first listener (``effectivePublicURL(boundPort:)``).
    public var publicURL: String?

    /// The configuration with every field at its default, for the given environment (`STATE_DIRECTORY`).
    public init(environment: [String: String] = [:]) {
        self.listen = [ListenAddress(host: "127.0.0.1", port: 8080)]
        self.listenTLS = []
        self.tlsCertificatePath = nil
        self.tlsKeyPath = nil
        self.dataDirectory = Self.defaultDataDirectory(environment: environment)
        self.store = .sqlite
        self.postgresURL = nil
        self.postgresCommitTimeout = .seconds(10)
        self.postgresStatementTimeout = .seconds(30)
        self.postgresConnectTimeout = .seconds(5)
        self.postgresReadTimeout = .seconds(5)
        self.postgresReadConnections = 4
        self.publicURL = nil
        self.heartbeatInterval = .seconds(25)
        self.idleTimeout = .seconds(120)
        self.maxSendBodySize = 512 * 1024
        self.maxRequestBodySize = 256 * 1024
        self.maxBufferedBodySize = 64 * 1024 * 1024
        self.maxPendingMessages = 100
        self.maxCollapseKeys = 4
        self.purgeInterval = .seconds(60)
        self.serverKeyRotationGrace = .seconds(24 * 3600)
        self.authRecheckInterval = .milliseconds(250)
        self.logLevel = .info
        self.logFormat = .text
        self.metricsEnabled = true
        self.metricsInterval = .seconds(10)
        self.shutdownDrainTimeout = .seconds(20)
        self.maxConnections = Self.defaultMaxConnections()
        self.maxConnectionsPerAddress = 0
        self.eventLoops = 0
        self.commitOnEventLoop = false
        self.requestTimeout = .seconds(30)
        self.deviceMessageRate = 240
        self.topicMessageRate = 600
        self.projectMessageRate = 600_000
        self.registrationRate = 6000
        self.registrationRatePerAddress = 300
        self.maxDevicesPerProject = 1_000_000
        self.deviceExpiry = .seconds(270 * 86_400)
        self.corsAllowedOrigins = []
    }

    /// `$STATE_DIRECTORY` when systemd set it (first entry if several), else `/var/lib/pushrelay`.
    static func defaultDataDirectory(environment: [String: String]) -> String {
        if let state = environment["STATE_DIRECTORY"], let first = state.split(separator: ":").first, !first.isEmpty {
            return String(first)
        }
        return "/var/lib/pushrelay"
    }

    /// Descriptors the daemon keeps open besides connections: the store's files, listeners, event loops, logs.
    public static let reservedDescriptors = 64

    /// The default `max_connections`: 200,000, or what this process's open-file limit leaves room for when that
    /// is lower, so that the default fits the machine it runs on.
    public static func defaultMaxConnections() -> Int {
        guard let limit = openFileLimit() else { return 200_000 }
        return min(200_000, connectionsFitting(openFileLimit: limit))
    }

    /// This process's soft open-file limit (`ulimit -n`), or `nil` when unlimited or unknown.
    public static func openFileLimit() -> UInt64? {
        #if canImport(Glibc)
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max
        else { return nil }
        return UInt64(limit.rlim_cur)
        #else
        return nil
        #endif
    }

    /// The most connections an open-file limit of `openFileLimit` leaves room for (at least 1).
    public static func connectionsFitting(openFileLimit: UInt64) -> Int {
        Int(clamping: max(openFileLimit, UInt64(reservedDescriptors) + 1) - UInt64(reservedDescriptors))
    }

    /// ``publicURL`` if set, else the URL of the first TLS listener (`https://`), else of the first cleartext one
    /// (`http://`), with the port it is bound to (`boundPort`, for port 0) and `localhost` for a wildcard host.
    public func effectivePublicURL(boundPort: Int? = nil) -> String {
        if let publicURL { return publicURL }
        let isTLS = !listenTLS.isEmpty
        guard var address = listenTLS.first ?? listen.first else { return "http://localhost" }
        if let boundPort { address.port = boundPort }
        var host = address.host
        if host == "0.0.0.0" || host == "::" || host.isEmpty { host = "localhost" }
        if host.contains(":") { host = "[\(host)]" }
        return (isTLS ? "https://" : "http://") + host + ":" + String(address.port)
    }

    /// Every listen address below 1024, which needs `CAP_NET_BIND_SERVICE` (and the unit's `AmbientCapabilities=`).
    public var privilegedListenAddresses: [ListenAddress] {
        (listen + listenTLS).filter { $0.port > 0 && $0.port < 1024 }
    }
}

extension PushRelayConfiguration {
    /// A host and port to listen on, written `host:port`, `[ipv6]:port` (port 0 picks a free port).
    public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
        /// An IPv4 or IPv6 literal or a host name; `0.0.0.0` or `::` for every interface.
        public var host: String
        /// The TCP port, 0...65535.
        public var port: Int

        /// An address from its parts; not validated (``ConfigurationLoader`` validates what it parses).
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// `host:port`, with brackets around an IPv6 literal.
        public var description: String {
            host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        }
    }

    /// The store engine.
    public enum StoreKind: String, Sendable, CaseIterable {
        /// The embedded SQLite store in ``PushRelayConfiguration/dataDirectory`` (WAL mode).
        case sqlite
        /// A PostgreSQL database at ``PushRelayConfiguration/postgresURL``, shared by every node.
        case postgres
    }

    /// Log levels, the same names as swift-log's `Logger.Level`.
    public enum LogLevel: String, Sendable, CaseIterable {
        /// Everything, including per-frame detail.
        case trace
        /// Per-request detail.
        case debug
        /// One line per notable event (the default).
        case info
        /// Noteworthy but normal conditions.
        case notice
        /// Something is wrong but the daemon carries on.
        case warning
        /// An operation failed.
        case error
        /// The daemon cannot carry on.
        case critical
    }

    /// Shapes of a log line.
    public enum LogFormat: String, Sendable, CaseIterable {
        /// `level label: message key=value …`, for a terminal or journald.
        case text
        /// One JSON object per line, for log shippers.
        case json
    }
}
