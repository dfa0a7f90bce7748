public import Logging
public import NIOCore
public import ServiceLifecycle
import UnixSignals

/// The daemon's composition root: `pushrelay serve` parses its configuration and runs the group made here.
///
/// The group holds, in start order, the systemd watchdog, the config file's reloading provider, the ``RelayService``
/// (store, relay, HTTP server) and the SIGHUP reload. service-lifecycle shuts services down in reverse order, so on
/// SIGTERM the reload stops first, then the relay drains, and the watchdog stops last: it keeps pinging through a
/// drain longer than `WatchdogSec=`.
public enum RelayServiceGroup {
    /// What the process around the group provides.
    public struct Options: Sendable {
        /// Renders `/metrics`; bootstrap the process-wide metrics system with it before making the group.
        public var exporter: PrometheusExporter
        /// READY, RELOADING, STOPPING and the watchdog, to `$NOTIFY_SOCKET` (disabled when it is not set).
        public var notifier: SystemdNotifier
        /// The log level that a SIGHUP reload sets from the new `log_level` (from ``RelayLogging/bootstrap``).
        public var logLevel: LogLevelControl?
        /// The configuration as flags, environment and the config file's reloading provider give it; its file
        /// provider runs in the group, and SIGHUP applies the file as it is then. Without it SIGHUP reloads only the
        /// TLS certificate and key.
        public var liveConfiguration: LiveConfiguration?
        /// Called once the listeners are bound, with their addresses in configuration order (cleartext first) and
        /// the OAuth2 token endpoint (`<public_url>/token`, or the first bound listener's when `public_url` is unset).
        public var onListening: @Sendable (_ addresses: [ListeningAddress], _ tokenEndpoint: String) -> Void
        /// Adds `POST /debug/echo` (answers with the request body), for `Benchmarks/http2.sh` only.
        public var debugBenchRoutes: Bool
        /// Whether a missing or empty SQLite store is created (`serve --init`). Without it the daemon refuses to
        /// start on one (``StoreError/Code/notFound``) rather than serve an empty store where one existed (an
        /// unmounted data disk, a wrong `data_dir`). Default false.
        public var createStore = false

        /// Options for a process with the given environment (`NOTIFY_SOCKET`, `WATCHDOG_USEC`).
        public init(
            environment: [String: String],
            exporter: PrometheusExporter = PrometheusExporter(),
            logLevel: LogLevelControl? = nil,
            liveConfiguration: LiveConfiguration? = nil,
            debugBenchRoutes: Bool = false,
            onListening: @escaping @Sendable (_ addresses: [ListeningAddress], _ tokenEndpoint: String) -> Void = { _, _ in }
        ) {
            self.exporter = exporter
            self.notifier = SystemdNotifier(environment: environment)
            self.logLevel = logLevel
            self.liveConfiguration = liveConfiguration
            self.onListening = onListening
            self.debugBenchRoutes = debugBenchRoutes
        }
    }

    /// A bound listener.
    public struct ListeningAddress: Sendable {
        /// The bound address (the real port when the configuration said 0).
        public var address: SocketAddress
        /// Whether it is a `listen_tls` listener.
        public var isTLS: Bool

        /// `127.0.0.1:8080`, `[::1]:8443`.
        public var hostAndPort: String {
            let ip = address.ipAddress ?? "?"
            let port = address.port ?? 0
            if case .v6 = address { return "[\(ip)]:\(port)" }
            return "\(ip):\(port)"
        }

        /// `http://127.0.0.1:8080` or `https://…`.
        public var url: String { "\(isTLS ? "https" : "http")://\(hostAndPort)" }
    }

    /// The daemon for `configuration`: sets up TLS and opens the store now (so that their errors come before
    /// anything runs: `TLSError`, `StoreError`), binds when the group runs.
    public static func make(
        configuration: PushRelayConfiguration,
        options: Options,
        logger: Logger
    ) async throws -> ServiceGroup {
        let relay = try await RelayService(configuration: configuration, options: options, logger: logger)
        let live = options.liveConfiguration
        let logLevel = options.logLevel
        let action: ReloadSignalService.Action = {
            guard let live else { return try relay.reload(configuration, logLevel: logLevel) }
            let reloaded = try await live.reloaded().configuration
            var status = try relay.reload(reloaded, logLevel: logLevel)
            // Fields other than the reloadable ones keep their values from the start until a restart.
            let needRestart = reloaded.changedFields(comparedTo: configuration).filter { !$0.isReloadable }
            if !needRestart.isEmpty {
                let keys = needRestart.map(\.key).joined(separator: ", ")
                logger.warning("changed in the configuration, applied only after a restart: \(keys)")
                status += "; restart to apply \(keys)"
            }
            return status
        }
        let reload =
            if let requests = live?.reloadRequests {
                ReloadSignalService(notifier: options.notifier, logger: logger, requests: requests, action: action)
            } else {
                ReloadSignalService(notifier: options.notifier, logger: logger, action: action)
            }
        // The file provider starts before the relay and stops after it; the reload service stops first.
        return make(
            services: (live?.fileService.map { [$0] } ?? []) + [relay, reload],
            watchdog: SystemdWatchdogService(notifier: options.notifier, logger: logger),
            configuration: configuration,
            logger: logger
        )
    }

    /// A service group that shuts down gracefully on SIGTERM and SIGINT (services in reverse order), gives the
    /// drain `shutdown_drain_timeout` plus `closeGrace` (the store's last commits and close), then cancels
    /// whatever still runs; SIGQUIT cancels at once.
    ///
    /// - Parameters:
    ///   - services: the daemon's services in start order. The systemd watchdog is put first, so that it is
    ///     stopped last and keeps pinging through the drain.
    ///   - watchdog: the ``SystemdWatchdogService`` (or `nil`).
    static func make(
        services: [any Service],
        watchdog: SystemdWatchdogService?,
        configuration: PushRelayConfiguration,
        closeGrace: Duration = .seconds(5),
        logger: Logger
    ) -> ServiceGroup {
        var all: [any Service] = []
        if let watchdog { all.append(watchdog) }
        all += services
        var groupConfiguration = ServiceGroupConfiguration(
            services: all.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
            logger: logger
        )
        groupConfiguration.gracefulShutdownSignals = [.sigterm, .sigint]
        groupConfiguration.cancellationSignals = [.sigquit]
        groupConfiguration.maximumGracefulShutdownDuration = configuration.shutdownDrainTimeout + closeGrace
        groupConfiguration.maximumCancellationDuration = .seconds(5)
        return ServiceGroup(configuration: groupConfiguration)
    }
}
