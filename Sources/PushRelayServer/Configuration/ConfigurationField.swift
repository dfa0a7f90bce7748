/// One field of ``PushRelayConfiguration``: its file key, environment variable and command-line flag.
///
/// The single list that the loader, `check-config`, the docs and the tests iterate, so that no field can be
/// forgotten in one of them.
public enum ConfigurationField: String, Sendable, CaseIterable, Hashable {
    /// ``PushRelayConfiguration/listen``.
    case listen
    /// ``PushRelayConfiguration/listenTLS``.
    case listenTLS = "listen_tls"
    /// ``PushRelayConfiguration/tlsCertificatePath``.
    case tlsCertificate = "tls_certificate"
    /// ``PushRelayConfiguration/tlsKeyPath``.
    case tlsKey = "tls_key"
    /// ``PushRelayConfiguration/dataDirectory``.
    case dataDir = "data_dir"
    /// ``PushRelayConfiguration/store``.
    case store
    /// ``PushRelayConfiguration/postgresURL``.
    case postgresURL = "postgres_url"
    /// ``PushRelayConfiguration/postgresCommitTimeout``.
    case postgresCommitTimeout = "postgres_commit_timeout"
    /// ``PushRelayConfiguration/postgresStatementTimeout``.
    case postgresStatementTimeout = "postgres_statement_timeout"
    /// ``PushRelayConfiguration/postgresConnectTimeout``.
    case postgresConnectTimeout = "postgres_connect_timeout"
    /// ``PushRelayConfiguration/postgresReadTimeout``.
    case postgresReadTimeout = "postgres_read_timeout"
    /// ``PushRelayConfiguration/postgresReadConnections``.
    case postgresReadConnections = "postgres_read_connections"
    /// ``PushRelayConfiguration/heartbeatInterval``.
    case heartbeatInterval = "heartbeat_interval"
    /// ``PushRelayConfiguration/idleTimeout``.
    case idleTimeout = "idle_timeout"
    /// ``PushRelayConfiguration/maxSendBodySize``.
    case maxSendBodySize = "max_send_body_size"
    /// ``PushRelayConfiguration/maxRequestBodySize``.
    case maxRequestBodySize = "max_request_body_size"
    /// ``PushRelayConfiguration/maxBufferedBodySize``.
    case maxBufferedBodySize = "max_buffered_body_size"
    /// ``PushRelayConfiguration/maxPendingMessages``.
    case maxPendingMessages = "max_pending_messages"
    /// ``PushRelayConfiguration/maxCollapseKeys``.
    case maxCollapseKeys = "max_collapse_keys"
    /// ``PushRelayConfiguration/purgeInterval``.
    case purgeInterval = "purge_interval"
    /// ``PushRelayConfiguration/serverKeyRotationGrace``.
    case serverKeyRotationGrace = "server_key_rotation_grace"
    /// ``PushRelayConfiguration/authRecheckInterval``.
    case authRecheckInterval = "auth_recheck_interval"
    /// ``PushRelayConfiguration/logLevel``.
    case logLevel = "log_level"
    /// ``PushRelayConfiguration/logFormat``.
    case logFormat = "log_format"
    /// ``PushRelayConfiguration/metricsEnabled``.
    case metricsEnabled = "metrics_enabled"
    /// ``PushRelayConfiguration/metricsInterval``.
    case metricsInterval = "metrics_interval"
    /// ``PushRelayConfiguration/shutdownDrainTimeout``.
    case shutdownDrainTimeout = "shutdown_drain_timeout"
    /// ``PushRelayConfiguration/maxConnections``.
    case maxConnections = "max_connections"
    /// ``PushRelayConfiguration/maxConnectionsPerAddress``.
    case maxConnectionsPerAddress = "max_connections_per_address"
    /// ``PushRelayConfiguration/eventLoops``.
    case eventLoops = "event_loops"
    /// ``PushRelayConfiguration/commitOnEventLoop``.
    case commitOnEventLoop = "commit_on_event_loop"
    /// ``PushRelayConfiguration/requestTimeout``.
    case requestTimeout = "request_timeout"
    /// ``PushRelayConfiguration/deviceMessageRate``.
    case deviceMessageRate = "device_message_rate"
    /// ``PushRelayConfiguration/topicMessageRate``.
    case topicMessageRate = "topic_message_rate"
    /// ``PushRelayConfiguration/projectMessageRate``.
    case projectMessageRate = "project_message_rate"
    /// ``PushRelayConfiguration/registrationRate``.
    case registrationRate = "registration_rate"
    /// ``PushRelayConfiguration/registrationRatePerAddress``.
    case registrationRatePerAddress = "registration_rate_per_address"
    /// ``PushRelayConfiguration/maxDevicesPerProject``.
    case maxDevicesPerProject = "max_devices_per_project"
    /// ``PushRelayConfiguration/deviceExpiry``.
    case deviceExpiry = "device_expiry"
    /// ``PushRelayConfiguration/corsAllowedOrigins``.
    case corsAllowedOrigins = "cors_allowed_origins"
    /// ``PushRelayConfiguration/publicURL``.
    case publicURL = "public_url"

    /// The key in the config file, e.g. `heartbeat_interval`.
    public var key: String { rawValue }

    /// The key swift-configuration reads the field by, e.g. `heartbeatInterval`: its providers turn it into the flag
    /// `--heartbeat-interval` and, under the `pushrelay` prefix, the variable `PUSHRELAY_HEARTBEAT_INTERVAL`.
    public var configKey: String {
        let words = rawValue.split(separator: "_")
        return words.enumerated().map { index, word in index == 0 ? String(word) : word.prefix(1).uppercased() + word.dropFirst() }
            .joined()
    }

    /// The field read by swift-configuration's key `configKey` (``configKey``), if there is one.
    public init?(configKey: String) {
        guard let field = Self.allCases.first(where: { $0.configKey == configKey }) else { return nil }
        self = field
    }

    /// The environment variable, e.g. `PUSHRELAY_HEARTBEAT_INTERVAL`.
    public var environmentVariable: String { "PUSHRELAY_" + rawValue.uppercased() }

    /// The command-line flag, e.g. `--heartbeat-interval`.
    public var flag: String { "--" + rawValue.replacingUnderscores() }

    /// Whether the value is a secret, printed masked by `check-config` and in errors.
    public var isSecret: Bool { self == .postgresURL }

    /// Whether a SIGHUP applies a new value without a restart.
    public var isReloadable: Bool { [.tlsCertificate, .tlsKey, .logLevel].contains(self) }

    /// What the value is, in one line (shown by `--help` of `serve` and `check-config`).
    public var summary: String {
        switch self {
        case .listen: "cleartext listen addresses, host:port[,host:port…]"
        case .listenTLS: "TLS listen addresses, host:port[,host:port…]"
        case .tlsCertificate: "PEM certificate chain file for the TLS listeners"
        case .tlsKey: "PEM private key file for the TLS listeners"
        case .dataDir: "directory of the SQLite store"
        case .store: "store engine: sqlite or postgres"
        case .postgresURL: "PostgreSQL URL for store = postgres (secret)"
        case .postgresCommitTimeout: "a group of sends and acks must commit on PostgreSQL within this, e.g. 10s"
        case .postgresStatementTimeout: "other PostgreSQL writes must have a statement answered within this, e.g. 30s"
        case .postgresConnectTimeout: "a new PostgreSQL connection must be ready (logged in) within this, e.g. 5s"
        case .postgresReadTimeout: "a PostgreSQL read (a look-up, a listing) must be answered within this, e.g. 5s"
        case .postgresReadConnections: "PostgreSQL connections for reads, besides the writer's and the listener's"
        case .heartbeatInterval: "heartbeat on idle device streams, e.g. 25s"
        case .idleTimeout: "close connections idle this long, e.g. 120s"
        case .maxSendBodySize: "largest /fcm/send body, e.g. 512KiB"
        case .maxRequestBodySize: "largest body on other routes, e.g. 256KiB"
        case .maxBufferedBodySize: "request bodies held at once over all HTTP/2 connections, e.g. 64MiB"
        case .maxPendingMessages: "pending non-collapsible messages per device"
        case .maxCollapseKeys: "pending collapse keys per device"
        case .purgeInterval: "how often expired messages are purged, e.g. 60s"
        case .serverKeyRotationGrace: "old server key still valid after rotation, e.g. 24h"
        case .authRecheckInterval: "a credential change made by another process (the CLI) is honoured within this, e.g. 250ms; 0: checked at every request"
        case .logLevel: "trace, debug, info, notice, warning, error, critical"
        case .logFormat: "text or json"
        case .metricsEnabled: "serve /metrics: true or false"
        case .metricsInterval: "how often the store's figures behind /metrics and /readyz are refreshed, e.g. 10s"
        case .shutdownDrainTimeout: "time allowed to drain on SIGTERM, e.g. 20s"
        case .maxConnections: "connections accepted at once (default: 200000, or what the open-file limit allows)"
        case .maxConnectionsPerAddress: "connections accepted at once from one IP address, 0 for no limit"
        case .eventLoops: "threads that serve the connections (event loops), 0 for one per CPU core"
        case .commitOnEventLoop: "commit the SQLite store on the event loop, no writer thread: true or false (needs event_loops = 1)"
        case .requestTimeout: "a request must arrive whole this long after it began, e.g. 30s"
        case .deviceMessageRate: "messages one device may be sent per minute (a burst, then that rate), 0 for no limit"
        case .topicMessageRate: "messages one topic or condition may be sent per minute, 0 for no limit"
        case .projectMessageRate: "messages one project may send per minute (one per recipient), 0 for no limit"
        case .registrationRate: "devices one project may register per minute (a burst, then that rate), 0 for no limit"
        case .registrationRatePerAddress: "devices one IP address may register per minute, 0 for no limit"
        case .maxDevicesPerProject: "devices one project may have registered at once, 0 for no limit"
        case .deviceExpiry: "remove devices unseen (no stream, no ack) this long, e.g. 270d; 0 to keep them forever"
        case .corsAllowedOrigins: "web origins allowed on the device routes, e.g. https://shop.example.com (none)"
        case .publicURL: "base URL senders reach this relay at (token_uri of service accounts)"
        }
    }

    /// One line per field, `  key / --flag: summary`, for the `--help` discussion of `serve` and `check-config`.
    public static var helpText: String {
        allCases.map { "  \($0.key) / \($0.flag): \($0.summary)" }.joined(separator: "\n")
    }

    /// The field for a config-file key, if there is one.
    public init?(key: String) {
        self.init(rawValue: key)
    }

    /// Other flags accepted for a field: `--tls-cert` for `--tls-certificate` (the shorter name in docs/tls.md).
    public static let flagAliases: [String: ConfigurationField] = ["--tls-cert": .tlsCertificate]

    /// The field for a command-line flag (`--heartbeat-interval`, or an alias such as `--tls-cert`), if there is one.
    public init?(flag: String) {
        if let field = Self.flagAliases[flag] {
            self = field
            return
        }
        guard flag.hasPrefix("--"), !flag.contains("_") else { return nil }
        self.init(rawValue: String(flag.dropFirst(2)).replacingHyphens())
    }
}

extension String {
    fileprivate func replacingUnderscores() -> String {
        String(map { $0 == "_" ? "-" : $0 })
    }

    fileprivate func replacingHyphens() -> String {
        String(map { $0 == "-" ? "_" : $0 })
    }
}
