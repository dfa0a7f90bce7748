import Configuration
import PushRelayStore
import SystemPackage
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A loaded configuration with where each value came from, and warnings that do not stop the daemon.
public struct LoadedConfiguration: Sendable {
    /// The effective configuration.
    public var configuration: PushRelayConfiguration
    /// The source of each field's value (``ConfigurationSource/defaultValue`` when nothing set it).
    public var sources: [ConfigurationField: ConfigurationSource]
    /// The config file read, if any.
    public var configFile: String?
    /// Things worth telling the operator that are not errors (ignored variables, privileged ports, fd limits).
    public var warnings: [String]
}

/// Loads ``PushRelayConfiguration`` from defaults, a config file, the environment and command-line flags through
/// swift-configuration: a `ConfigReader` over its `CommandLineArgumentsProvider`, its `EnvironmentVariablesProvider`
/// (keys under the `pushrelay` prefix) and a file provider of ``ConfigurationFile``, in that order of precedence:
/// flags > environment > file > defaults.
///
/// - The file is named by `--config FILE` (or `--config=FILE`), else by `PUSHRELAY_CONFIG`; without either, no
///   file is read. Its format is described by `deploy/pushrelay.conf` (a TOML subset, top-level keys only).
/// - Each field is read by its ``ConfigurationField/configKey``, which the providers spell `PUSHRELAY_<KEY>`
///   (`PUSHRELAY_HEARTBEAT_INTERVAL=30s`) and `--<key-with-hyphens>` (`--heartbeat-interval 30s` or
///   `--heartbeat-interval=30s`). Lists are comma-separated there, or the flag is repeated. A boolean flag without a
///   value means `true`. A flag's value cannot contain a comma unless the field is a list (the provider splits it).
/// - An unknown key in the file or an unknown flag is an error; an unknown `PUSHRELAY_*` variable is a warning
///   (tests and scripts set others, such as `PUSHRELAY_BIN`).
/// - Every problem is collected and thrown together as one ``ConfigurationError``.
///
/// `serve` keeps the file open as a reloading provider instead: ``LiveConfiguration``.
public enum ConfigurationLoader {
    /// The environment variable naming the config file when no `--config` flag is given.
    public static let configFileVariable = "PUSHRELAY_CONFIG"

    /// The flag naming the config file.
    public static let configFileFlag = "--config"

    /// Loads the configuration once, the file through swift-configuration's `FileProvider`.
    /// - Parameters:
    ///   - arguments: command-line flags, without the program and subcommand names (`["--listen", "[::]:80"]`).
    ///   - environment: the process environment (pass `ProcessInfo.processInfo.environment`).
    /// - Throws: ``ConfigurationError`` listing every problem found.
    public static func load(
        arguments: [String] = [],
        environment: [String: String]
    ) async throws(ConfigurationError) -> LoadedConfiguration {
        let inputs = ConfigurationInputs(arguments: arguments, environment: environment)
        return try await inputs.load { path in try await FileProvider<ConfigurationFile>(filePath: FilePath(path)) }.0
    }
}

/// The accumulating state of one load.
struct ConfigurationBuilder {
    var configuration: PushRelayConfiguration
    var sources: [ConfigurationField: ConfigurationSource] = [:]
    var problems: [ConfigurationError.Problem] = []
    var warnings: [String] = []

    init(environment: [String: String]) {
        self.configuration = PushRelayConfiguration(environment: environment)
        for field in ConfigurationField.allCases { sources[field] = .defaultValue }
    }

    // MARK: Fields

    mutating func apply(_ field: ConfigurationField, _ raw: ConfigurationRawValue, from source: ConfigurationSource) {
        do {
            try set(field, raw)
            sources[field] = source
        } catch {
            problems.append(.init(code: .invalidValue, field: field, source: source, message: error.message))
        }
    }

    private mutating func set(
        _ field: ConfigurationField,
        _ raw: ConfigurationRawValue
    ) throws(ConfigurationValueParser.Failure) {
        typealias Parse = ConfigurationValueParser
        switch field {
        case .listen:
            configuration.listen = try Parse.list(raw).map { text throws(Parse.Failure) in
                try Parse.listenAddress(text)
            }
        case .corsAllowedOrigins:
            configuration.corsAllowedOrigins = try Parse.list(raw).map { text throws(Parse.Failure) in
                try Parse.origin(text)
            }
        case .listenTLS:
            configuration.listenTLS = try Parse.list(raw).map { text throws(Parse.Failure) in
                try Parse.listenAddress(text)
            }
        case .tlsCertificate:
            configuration.tlsCertificatePath = try Self.optionalPath(raw)
        case .tlsKey:
            configuration.tlsKeyPath = try Self.optionalPath(raw)
        case .dataDir:
            let path = try Parse.text(raw)
            guard !path.trimmed.isEmpty else { throw Parse.Failure("must not be empty") }
            configuration.dataDirectory = path
        case .store:
            configuration.store = try Parse.choice(raw, as: PushRelayConfiguration.StoreKind.self)
        case .postgresURL:
            let url = try Parse.text(raw)
            if url.isEmpty {
                configuration.postgresURL = nil
            } else {
                guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else {
                    // Never echo the value: it may hold a password.
                    throw Parse.Failure("must start with postgres:// or postgresql://")
                }
                configuration.postgresURL = url
            }
        case .postgresCommitTimeout:
            configuration.postgresCommitTimeout = try Parse.duration(raw)
        case .postgresStatementTimeout:
            configuration.postgresStatementTimeout = try Parse.duration(raw)
        case .postgresConnectTimeout:
            configuration.postgresConnectTimeout = try Parse.duration(raw)
        case .postgresReadTimeout:
            configuration.postgresReadTimeout = try Parse.duration(raw)
        case .postgresReadConnections:
            configuration.postgresReadConnections = try Parse.integer(raw, in: 1...1024)
        case .heartbeatInterval:
            configuration.heartbeatInterval = try Parse.duration(raw)
        case .idleTimeout:
            configuration.idleTimeout = try Parse.duration(raw)
        case .maxSendBodySize:
            configuration.maxSendBodySize = try Parse.size(raw)
        case .maxRequestBodySize:
            configuration.maxRequestBodySize = try Parse.size(raw)
        case .maxBufferedBodySize:
            configuration.maxBufferedBodySize = try Parse.size(raw)
        case .maxPendingMessages:
            configuration.maxPendingMessages = try Parse.integer(raw, in: 1...100_000)
        case .maxCollapseKeys:
            configuration.maxCollapseKeys = try Parse.integer(raw, in: 1...1000)
        case .purgeInterval:
            configuration.purgeInterval = try Parse.duration(raw)
        case .serverKeyRotationGrace:
            configuration.serverKeyRotationGrace = try Parse.duration(raw)
        case .authRecheckInterval:
            configuration.authRecheckInterval = try Parse.durationOrZero(raw) ?? .zero
        case .logLevel:
            configuration.logLevel = try Parse.choice(raw, as: PushRelayConfiguration.LogLevel.self)
        case .logFormat:
            configuration.logFormat = try Parse.choice(raw, as: PushRelayConfiguration.LogFormat.self)
        case .metricsEnabled:
            configuration.metricsEnabled = try Parse.boolean(raw)
        case .metricsInterval:
            configuration.metricsInterval = try Parse.duration(raw)
        case .shutdownDrainTimeout:
            configuration.shutdownDrainTimeout = try Parse.duration(raw)
        case .maxConnections:
            configuration.maxConnections = try Parse.integer(raw, in: 1...10_000_000)
        case .maxConnectionsPerAddress:
            configuration.maxConnectionsPerAddress = try Parse.integer(raw, in: 0...10_000_000)
        case .eventLoops:
            configuration.eventLoops = try Parse.integer(raw, in: 0...1024)
        case .commitOnEventLoop:
            configuration.commitOnEventLoop = try Parse.boolean(raw)
        case .requestTimeout:
            configuration.requestTimeout = try Parse.duration(raw)
        case .deviceMessageRate:
            configuration.deviceMessageRate = try Parse.integer(raw, in: 0...1_000_000)
        case .topicMessageRate:
            configuration.topicMessageRate = try Parse.integer(raw, in: 0...1_000_000)
        case .projectMessageRate:
            configuration.projectMessageRate = try Parse.integer(raw, in: 0...1_000_000_000)
        case .registrationRate:
            configuration.registrationRate = try Parse.integer(raw, in: 0...1_000_000)
        case .registrationRatePerAddress:
            configuration.registrationRatePerAddress = try Parse.integer(raw, in: 0...1_000_000)
        case .maxDevicesPerProject:
            configuration.maxDevicesPerProject = try Parse.integer(raw, in: 0...1_000_000_000)
        case .deviceExpiry:
            configuration.deviceExpiry = try Parse.durationOrZero(raw)
        case .publicURL:
            var url = try Parse.text(raw)
            while url.hasSuffix("/") { url.removeLast() }
            if url.isEmpty {
                configuration.publicURL = nil
            } else {
                guard url.hasPrefix("http://") || url.hasPrefix("https://"), url.count > 8, !url.contains(" ") else {
                    throw Parse.Failure("must be an http:// or https:// URL, e.g. https://push.example.com")
                }
                configuration.publicURL = url
            }
        }
    }

    private static func optionalPath(_ raw: ConfigurationRawValue) throws(ConfigurationValueParser.Failure) -> String? {
        let path = try ConfigurationValueParser.text(raw)
        return path.isEmpty ? nil : path
    }

    // MARK: Cross-field checks

    mutating func validate() {
        let config = configuration
        if config.listen.isEmpty && config.listenTLS.isEmpty {
            problems.append(.init(
                code: .missingValue,
                field: .listen,
                source: sources[.listen] ?? .defaultValue,
                message: "no listen address: set listen or listen_tls"
            ))
        }
        var seen: Set<PushRelayConfiguration.ListenAddress> = []
        for address in config.listen + config.listenTLS where address.port != 0 {
            if !seen.insert(address).inserted {
                let field: ConfigurationField = config.listenTLS.contains(address) ? .listenTLS : .listen
                problems.append(.init(
                    code: .invalidValue,
                    field: field,
                    source: sources[field] ?? .defaultValue,
                    message: "address \(address) is listed twice"
                ))
            }
        }
        if !config.listenTLS.isEmpty {
            for (field, path) in [(ConfigurationField.tlsCertificate, config.tlsCertificatePath),
                                  (.tlsKey, config.tlsKeyPath)] where path == nil {
                problems.append(.init(
                    code: .missingValue,
                    field: field,
                    source: sources[.listenTLS] ?? .defaultValue,
                    message: "listen_tls is set, so \(field.key) is required"
                ))
            }
        }
        for (field, path) in [(ConfigurationField.tlsCertificate, config.tlsCertificatePath),
                              (.tlsKey, config.tlsKeyPath)] {
            guard let path else { continue }
            if let reason = FileChecks.unreadableReason(path) {
                problems.append(.init(
                    code: .unreadableFile,
                    field: field,
                    source: sources[field] ?? .defaultValue,
                    message: "'\(path)' \(reason)"
                ))
            }
        }
        var isDirectory = false
        if FileChecks.fileExists(config.dataDirectory, isDirectory: &isDirectory), !isDirectory {
            problems.append(.init(
                code: .invalidValue,
                field: .dataDir,
                source: sources[.dataDir] ?? .defaultValue,
                message: "'\(config.dataDirectory)' exists and is not a directory"
            ))
        }
        if config.store == .postgres {
            if let url = config.postgresURL {
                do {
                    _ = try PostgresURL(url)
                } catch {
                    // The parser's reason never contains the password.
                    problems.append(.init(
                        code: .invalidValue,
                        field: .postgresURL,
                        source: sources[.postgresURL] ?? .defaultValue,
                        message: error.message
                    ))
                }
            } else {
                problems.append(.init(
                    code: .invalidValue,
                    field: .postgresURL,
                    source: sources[.store] ?? .defaultValue,
                    message: "store = postgres needs postgres_url"
                ))
            }
        }
        if config.commitOnEventLoop {
            var needs: [String] = []
            if config.eventLoops != 1 { needs.append("event_loops = 1 (it is \(config.eventLoops))") }
            if config.store != .sqlite { needs.append("store = sqlite") }
            if !needs.isEmpty {
                problems.append(.init(
                    code: .invalidValue,
                    field: .commitOnEventLoop,
                    source: sources[.commitOnEventLoop] ?? .defaultValue,
                    message: "commit_on_event_loop needs " + needs.joined(separator: " and ")
                ))
            }
        }
        for address in config.privilegedListenAddresses {
            warnings.append(
                "\(address) is below port 1024: the daemon needs CAP_NET_BIND_SERVICE "
                    + "(AmbientCapabilities=CAP_NET_BIND_SERVICE and CapabilityBoundingSet=CAP_NET_BIND_SERVICE in the unit)"
            )
        }
        // The default already fits the open-file limit (PushRelayConfiguration.defaultMaxConnections); a value the
        // operator set above it is kept, and warned about.
        if sources[.maxConnections] != .defaultValue, let limit = PushRelayConfiguration.openFileLimit(),
            config.maxConnections > PushRelayConfiguration.connectionsFitting(openFileLimit: limit)
        {
            warnings.append(
                "max_connections \(config.maxConnections) is above this process's open-file limit \(limit) "
                    + "(minus \(PushRelayConfiguration.reservedDescriptors) for the store, listeners and event loops): "
                    + "raise LimitNOFILE= or ulimit -n"
            )
        }
    }

}

/// What the loader asks of the file system.
enum FileChecks {
    /// Why `path` cannot be read as a file, or `nil` if it can.
    static func unreadableReason(_ path: String) -> String? {
        var isDirectory = false
        guard fileExists(path, isDirectory: &isDirectory) else { return "does not exist" }
        if isDirectory { return "is a directory, not a file" }
        guard FileManager.default.isReadableFile(atPath: path) else { return "is not readable by this user" }
        return nil
    }

    static func fileExists(_ path: String, isDirectory: inout Bool) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
        return true
    }
}

extension ConfigurationField {
    /// How a field's value is read from the providers.
    enum ValueShape {
        /// One value.
        case single
        /// A list: comma-separated in the environment, repeatable as a flag, an array in the file.
        case list
        /// A boolean, `true` when its flag is given without a value.
        case `switch`
    }

    var valueShape: ValueShape {
        switch self {
        case .listen, .listenTLS, .corsAllowedOrigins: .list
        case .metricsEnabled, .commitOnEventLoop: .switch
        default: .single
        }
    }
}
