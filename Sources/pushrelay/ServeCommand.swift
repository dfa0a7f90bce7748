import ArgumentParser
import Foundation
import Logging
import PushRelayHTTP
import PushRelayServer
import PushRelayStore
import PushRelayTLS
import ServiceLifecycle

/// `pushrelay serve`: runs the relay daemon until SIGTERM or SIGINT, then drains gracefully.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the relay daemon.",
        discussion: """
            Configuration comes from --config FILE (or $PUSHRELAY_CONFIG), then PUSHRELAY_<FIELD> environment \
            variables, then the flags below; later ones win. `pushrelay check-config` prints the result.

            The SQLite store must exist (`pushrelay project create` makes it): a missing or empty one stops the \
            daemon (exit 66) unless --init is given; a damaged one stops it too (exit 65, `PRAGMA quick_check`).

            Fields (file key / flag):
            \(ConfigurationField.helpText)
            """
    )

    @Argument(parsing: .captureForPassthrough, help: ArgumentHelp("[--<field> <value> …]", valueName: "flags"))
    var arguments: [String] = []

    /// Hidden, for Benchmarks/http2.sh only: `POST /debug/echo` answers with the request body.
    static let benchRoutesFlag = "--debug-bench-routes"
    /// Creates the SQLite store when it is missing (a first start); without it a missing store stops the daemon.
    static let initFlag = "--init"

    func run() async throws {
        if arguments.contains("--help") || arguments.contains("-h") { throw CleanExit.helpRequest(Self.self) }
        let benchRoutes = arguments.contains(Self.benchRoutesFlag)
        let createStore = arguments.contains(Self.initFlag)
        let configurationArguments = arguments.filter { $0 != Self.benchRoutesFlag && $0 != Self.initFlag }
        let environment = ProcessInfo.processInfo.environment
        let live: LiveConfiguration
        do {
            live = try await LiveConfiguration.load(
                arguments: configurationArguments,
                environment: environment,
                logger: Logger(label: "pushrelay.config")
            )
        } catch {
            FileHandle.standardError.write(Data("pushrelay: invalid configuration:\n".utf8))
            for problem in error.problems { FileHandle.standardError.write(Data("  \(problem)\n".utf8)) }
            throw ExitCode(78)
        }
        let loaded = live.initial
        let configuration = loaded.configuration
        let levelControl = RelayLogging.bootstrap(configuration: configuration, environment: environment)
        let logger = Logger(label: "pushrelay")
        for warning in loaded.warnings { logger.warning("\(warning)") }

        let exporter = PrometheusExporter()
        exporter.bootstrapMetricsSystem()
        var options = RelayServiceGroup.Options(
            environment: environment,
            exporter: exporter,
            logLevel: levelControl,
            liveConfiguration: live,
            debugBenchRoutes: benchRoutes,
            onListening: { addresses, tokenEndpoint in
                for address in addresses { print("pushrelay listening on \(address.url)") }
                print("pushrelay token endpoint \(tokenEndpoint)")
                fflush(nil)  // tests and scripts read the lines through a pipe
            }
        )
        options.createStore = createStore
        let group: ServiceGroup
        do {
            group = try await RelayServiceGroup.make(configuration: configuration, options: options, logger: logger)
        } catch let error as TLSError {
            FileHandle.standardError.write(Data("pushrelay: cannot set up TLS: \(error.message) (\(error.code))\n".utf8))
            throw ExitCode(78)
        } catch let error as StoreError where error.code == .notFound {
            let hint = "create it with `pushrelay project create NAME --data-dir \(configuration.dataDirectory)`"
                + " or start once with `pushrelay serve --init`"
            FileHandle.standardError.write(Data("pushrelay: \(error.message): \(hint)\n".utf8))
            throw ExitCode(66)
        } catch let error as StoreError {
            // The message never contains the URL's password.
            FileHandle.standardError.write(Data("pushrelay: cannot open the store: \(error)\n".utf8))
            throw ExitCode(error.exitStatus)
        }
        do {
            try await group.run()
        } catch let error as HTTPServerListenError {
            // One line naming the address (the port is taken, or the address is not this host's): 69, as for a
            // store that cannot be opened.
            FileHandle.standardError.write(Data("pushrelay: \(error)\n".utf8))
            throw ExitCode(69)
        }
        logger.info("stopped")
    }
}
