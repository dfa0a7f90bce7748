import ArgumentParser
import Foundation
import HTTPTypes
import Logging
import NIOCore
import PushRelayCore
import PushRelayHTTP
import PushRelayServer
import PushRelayStore
import PushRelayTLS
import ServiceLifecycle
import UnixSignals

#if canImport(Glibc)
import Glibc
#endif

/// `pushrelay serve`: runs the relay daemon until SIGTERM or SIGINT, then drains gracefully.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the relay daemon.",
        discussion: """
            Configuration comes from --config FILE (or $PUSHRELAY_CONFIG), then PUSHRELAY_<FIELD> environment \
            variables, then the flags below; later ones win. `pushrelay check-config` prints the result.

            Fields (file key / flag):
            \(ConfigurationField.helpText)
            """
    )

    @Argument(parsing: .captureForPassthrough, help: ArgumentHelp("[--<field> <value> …]", valueName: "flags"))
    var arguments: [String] = []

    /// Hidden, for Benchmarks/http2.sh only: `POST /debug/echo` answers with the request body.
    static let benchRoutesFlag = "--debug-bench-routes"

    func run() async throws {
        if arguments.contains("--help") || arguments.contains("-h") { throw CleanExit.helpRequest(Self.self) }
        let benchRoutes = arguments.contains(Self.benchRoutesFlag)
        let environment = ProcessInfo.processInfo.environment
        let loaded: LoadedConfiguration
        do {
            loaded = try ConfigurationLoader.load(
                arguments: arguments.filter { $0 != Self.benchRoutesFlag },
                environment: environment
            )
        } catch {
            FileHandle.standardError.write(Data("pushrelay: invalid configuration:\n".utf8))
            for problem in error.problems { FileHandle.standardError.write(Data("  \(problem)\n".utf8)) }
            throw ExitCode(78)
        }
        let configuration = loaded.configuration
        let levelControl = RelayLogging.bootstrap(configuration: configuration, environment: environment)
        let logger = Logger(label: "pushrelay")
        for warning in loaded.warnings { logger.warning("\(warning)") }

        let exporter = PrometheusExporter()
        exporter.bootstrapMetricsSystem()
        let notifier = SystemdNotifier(environment: environment)

        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        var storeConfiguration = SQLiteStore.Configuration.relay(directory: configuration.dataDirectory)
        storeConfiguration.queuePolicy.maxPendingNonCollapsible = configuration.maxPendingMessages
        storeConfiguration.queuePolicy.maxCollapseKeys = configuration.maxCollapseKeys
        let store = try SQLiteStore(configuration: storeConfiguration, logger: Logger(label: "pushrelay.store"))

        var options = RelayApplication.Options()
        options.heartbeatInterval = configuration.heartbeatInterval
        options.corsAllowedOrigins = configuration.corsAllowedOrigins
        options.maxSendBodyBytes = configuration.maxSendBodySize
        options.purgeInterval = configuration.purgeInterval
        options.metricsEnabled = configuration.metricsEnabled
        options.maxRequestBodyBytes = configuration.maxRequestBodySize
        options.statisticsInterval = configuration.metricsInterval
        options.publicURL = configuration.effectivePublicURL()
        let relay = RelayApplication(store: store, options: options, exporter: exporter, logger: logger)
        let router = relay.router
        if benchRoutes {
            router.add(.post, "/debug/echo", .immediate { _, body in
                HTTPServerResponse(status: .ok, headerFields: [.contentType: "application/octet-stream"], body: .bytes(body))
            })
        }

        let tlsContext: TLSServerContext?
        do {
            tlsContext = try Self.makeTLSContext(configuration)
        } catch {
            FileHandle.standardError.write(Data("pushrelay: cannot set up TLS: \(error.message) (\(error.code))\n".utf8))
            throw ExitCode(78)
        }

        var serverConfiguration = HTTPServer.Configuration()
        serverConfiguration.idleTimeout = .nanoseconds(Int64(configuration.idleTimeout.components.seconds) * 1_000_000_000)
        serverConfiguration.drainTimeout = .seconds(configuration.shutdownDrainTimeout.components.seconds)
        var listeners = configuration.listen.map { HTTPServer.Listener(host: $0.host, port: $0.port) }
        if let tlsContext {
            let factory = TLSMetricsHandler.factory(context: tlsContext, metrics: relay.metrics)
            listeners += configuration.listenTLS.map {
                HTTPServer.Listener(host: $0.host, port: $0.port, tlsHandlerFactory: factory)
            }
        }
        let server = HTTPServer(configuration: serverConfiguration, listeners: listeners, responder: router, logger: logger)
        let addresses = try await server.start()
        // start() returns the bound addresses in the order of `listeners`: cleartext first, then TLS.
        for (index, address) in addresses.enumerated() {
            let scheme = index < configuration.listen.count ? "http" : "https"
            print("pushrelay listening on \(scheme)://\(Self.format(address))")
        }
        if configuration.publicURL == nil {
            // The token URI names the first TLS listener, else the first cleartext one, with its bound port.
            let first = configuration.listenTLS.isEmpty ? 0 : configuration.listen.count
            if first < addresses.count, let port = addresses[first].port {
                relay.publicURL.set(configuration.effectivePublicURL(boundPort: port))
            }
        }
        print("pushrelay token endpoint \(relay.publicURL.tokenURI)")
        fflush(nil)  // tests and scripts read the line through a pipe
        await relay.refreshStatistics()
        relay.markReady()
        try? notifier.ready(status: "listening on \(addresses.map(Self.format).joined(separator: ", "))")

        let daemon = DaemonService(server: server, relay: relay, store: store, notifier: notifier, logger: logger)
        let reload = ReloadSignalService(notifier: notifier, logger: logger) {
            let reloaded = try ConfigurationLoader.load(arguments: arguments.filter { $0 != Self.benchRoutesFlag }, environment: environment)
            levelControl.level = reloaded.configuration.logLevel.loggerLevel
            var status = "reloaded: log level \(reloaded.configuration.logLevel.rawValue)"
            if let tlsContext {
                // Refused (logged by the context, old certificate kept) unless both files are good.
                let certificate = try tlsContext.reload()
                status += ", TLS certificate serial \(certificate.serialNumber)"
            }
            return status
        }
        let group = ServiceGroup(
            services: [daemon, SystemdWatchdogService(notifier: notifier, logger: logger), reload],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        try await group.run()
        logger.info("stopped")
    }

    /// The TLS context for the `listen_tls` listeners, or `nil` when there are none.
    static func makeTLSContext(_ configuration: PushRelayConfiguration) throws(TLSError) -> TLSServerContext? {
        guard !configuration.listenTLS.isEmpty,
            let certificate = configuration.tlsCertificatePath,
            let key = configuration.tlsKeyPath
        else { return nil }
        return try TLSServerContext(
            configuration: TLSServerConfiguration(certificateChainFile: certificate, privateKeyFile: key),
            logger: Logger(label: "pushrelay.tls")
        )
    }

    static func format(_ address: SocketAddress) -> String {
        let ip = address.ipAddress ?? "?"
        let port = address.port ?? 0
        if case .v6 = address { return "[\(ip)]:\(port)" }
        return "\(ip):\(port)"
    }
}

/// The daemon's main service: the HTTP server and the relay's periodic work. On graceful shutdown it ends the
/// live streams (clients reconnect elsewhere), stops accepting, lets in-flight requests and commits finish, then
/// closes the store.
struct DaemonService: Service {
    let server: HTTPServer
    let relay: RelayApplication
    let store: SQLiteStore
    let notifier: SystemdNotifier
    let logger: Logger

    func run() async throws {
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { await relay.run() }
                try await server.run()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            logger.info("draining")
            try? notifier.stopping(status: "draining")
            relay.drain()
            server.beginShutdown()
        }
        await store.close()
    }
}
