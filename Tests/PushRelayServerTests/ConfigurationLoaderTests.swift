@testable import PushRelayServer
import Testing

private let fixtures = ConfigurationTestFixtures.self

@Suite("Configuration loader")
struct ConfigurationLoaderTests {
    @Test("defaults: documented values, data_dir from STATE_DIRECTORY")
    func defaults() async throws {
        let loaded = try await ConfigurationLoader.load(environment: [:])
        let config = loaded.configuration
        #expect(config.listen == [.init(host: "127.0.0.1", port: 8080)])
        #expect(config.listenTLS.isEmpty)
        #expect(config.heartbeatInterval == .seconds(25))
        #expect(config.maxPendingMessages == 100)
        #expect(config.maxCollapseKeys == 4)
        #expect(config.serverKeyRotationGrace == .seconds(86_400))
        #expect(config.dataDirectory == "/var/lib/pushrelay")
        #expect(loaded.configFile == nil)
        let systemd = try await ConfigurationLoader.load(environment: ["STATE_DIRECTORY": "/var/lib/private/pushrelay"])
        #expect(systemd.configuration.dataDirectory == "/var/lib/private/pushrelay")
    }

    @Test("the file is found through PUSHRELAY_CONFIG, and --config beats it")
    func configFileSelection() async throws {
        let first = fixtures.configFile("heartbeat_interval = \"11s\"\n")
        let second = fixtures.configFile("heartbeat_interval = \"12s\"\n")
        let viaEnvironment = try await ConfigurationLoader.load(environment: ["PUSHRELAY_CONFIG": first])
        #expect(viaEnvironment.configuration.heartbeatInterval == .seconds(11))
        #expect(viaEnvironment.configFile == first)
        let viaFlag = try await ConfigurationLoader.load(arguments: ["--config", second], environment: ["PUSHRELAY_CONFIG": first])
        #expect(viaFlag.configuration.heartbeatInterval == .seconds(12))
    }

    @Test("an unknown key in the file is an error with its line and a suggestion")
    func unknownKey() async {
        let file = fixtures.configFile("listen = [\"127.0.0.1:1\"]\nheartbeat_intervall = \"5s\"\n")
        let error = await #expect(throws: ConfigurationError.self) {
            try await ConfigurationLoader.load(arguments: ["--config", file], environment: [:])
        }
        #expect(error?.problems.first?.code == .unknownKey)
        #expect(error?.problems.first?.source == .file(path: file, line: 2))
        #expect(error?.description.contains("did you mean heartbeat_interval?") == true)
    }

    @Test("store = postgres needs a usable postgres_url; the reason never shows the password")
    func postgresStoreNeedsURL() async throws {
        let missing = await #expect(throws: ConfigurationError.self) {
            try await ConfigurationLoader.load(arguments: ["--store", "postgres"], environment: [:])
        }
        #expect(missing?.problems.map(\.field) == [.postgresURL])
        let unsupported = await #expect(throws: ConfigurationError.self) {
            try await ConfigurationLoader.load(
                arguments: ["--store", "postgres", "--postgres-url", "postgres://relay:hunter2@db/relay?sslmode=require"],
                environment: [:])
        }
        #expect(unsupported?.problems.map(\.field) == [.postgresURL])
        #expect(unsupported?.problems.first?.description.contains("hunter2") == false)
        let loaded = try await ConfigurationLoader.load(
            arguments: ["--store", "postgres", "--postgres-url", "postgres://relay:hunter2@db/relay"], environment: [:])
        #expect(loaded.configuration.store == .postgres)
    }

    @Test("commit_on_event_loop needs event_loops = 1 and the SQLite store, and says so")
    func commitOnEventLoopNeedsOneLoopAndSQLite() async throws {
        let noLoops = await #expect(throws: ConfigurationError.self) {
            try await ConfigurationLoader.load(arguments: ["--commit-on-event-loop"], environment: [:])
        }
        #expect(noLoops?.problems.map(\.field) == [.commitOnEventLoop])
        #expect(noLoops?.problems.first?.description.contains("needs event_loops = 1 (it is 0)") == true)
        let twoLoops = await #expect(throws: ConfigurationError.self) {
            try await ConfigurationLoader.load(
                arguments: ["--commit-on-event-loop", "--event-loops", "2"], environment: [:])
        }
        #expect(twoLoops?.problems.first?.description.contains("(it is 2)") == true)
        let postgres = await #expect(throws: ConfigurationError.self) {
            try await ConfigurationLoader.load(
                arguments: ["--store", "postgres", "--postgres-url", "postgres://relay@db/relay", "--event-loops", "1"],
                environment: ["PUSHRELAY_COMMIT_ON_EVENT_LOOP": "true"])
        }
        #expect(postgres?.problems.map(\.field) == [.commitOnEventLoop])
        #expect(postgres?.problems.first?.description.contains("needs store = sqlite") == true)
        let loaded = try await ConfigurationLoader.load(
            arguments: ["--commit-on-event-loop", "--event-loops", "1"], environment: [:])
        #expect(loaded.configuration.commitOnEventLoop && loaded.configuration.eventLoops == 1)
        let off = try await ConfigurationLoader.load(arguments: ["--commit-on-event-loop", "false"], environment: [:])
        #expect(!off.configuration.commitOnEventLoop)
    }

    @Test("a stray argument, an unknown flag and a flag without value are errors")
    func unknownFlags() async {
        // Words after a flag are its values (swift-configuration's command-line grammar): only a first word is stray.
        let error = await #expect(throws: ConfigurationError.self) {
            try await ConfigurationLoader.load(arguments: ["stray", "--lisen", "x:1", "--heartbeat-interval"], environment: [:])
        }
        let codes = error?.problems.map(\.code) ?? []
        #expect(codes == [.unknownFlag, .unknownFlag, .missingValue])
        #expect(error?.problems.first?.description.contains("unexpected argument 'stray'") == true)
        #expect(error?.problems[1].description.contains("did you mean --listen?") == true)
        #expect(error?.problems.last?.field == .heartbeatInterval)
        #expect(error?.problems.last?.description.contains("--heartbeat-interval needs a value") == true)
    }

    @Test("a single-valued flag given twice, or with two words, is an error naming the flag")
    func singleValuedFlagTwice() async {
        for arguments in [["--log-level", "debug", "info"], ["--log-level", "debug", "--log-level", "info"]] {
            let error = await #expect(throws: ConfigurationError.self) {
                try await ConfigurationLoader.load(arguments: arguments, environment: [:])
            }
            #expect(error?.problems.map(\.field) == [.logLevel], "\(arguments)")
            #expect(error?.problems.first?.source == .commandLine(flag: "--log-level"), "\(arguments)")
        }
    }

    @Test("all problems are reported at once, in source order")
    func collectsAllProblems() async {
        let file = fixtures.configFile("max_connections = 0\n")
        let error = await #expect(throws: ConfigurationError.self) {
            try await ConfigurationLoader.load(
                arguments: ["--config", file, "--log-level", "loud"],
                environment: ["PUSHRELAY_IDLE_TIMEOUT": "-1s"]
            )
        }
        #expect(error?.problems.map(\.field) == [.maxConnections, .idleTimeout, .logLevel])
    }

    @Test("a missing or unreadable config file names the path")
    func unreadableFile() async {
        for path in [fixtures.path("nope.conf"), fixtures.path("data")] {
            let error = await #expect(throws: ConfigurationError.self) {
                try await ConfigurationLoader.load(arguments: ["--config", path], environment: [:])
            }
            #expect(error?.problems.first?.code == .unreadableFile)
            #expect(error?.description.contains(path) == true)
        }
    }

    @Test("listen_tls without certificate and key: both are named as missing")
    func tlsNeedsFiles() async {
        let error = await #expect(throws: ConfigurationError.self) {
            try await ConfigurationLoader.load(arguments: ["--listen-tls", "0.0.0.0:8443"], environment: [:])
        }
        #expect(error?.problems.map(\.field) == [.tlsCertificate, .tlsKey])
        #expect(error?.problems.allSatisfy { $0.code == .missingValue } == true)
    }

    @Test("--tls-cert is accepted for --tls-certificate")
    func tlsCertAlias() async throws {
        let certificate = fixtures.path("cert-a.pem")
        let key = fixtures.path("key-a.pem")
        let loaded = try await ConfigurationLoader.load(
            arguments: ["--listen-tls", "127.0.0.1:0", "--tls-cert", certificate, "--tls-key", key],
            environment: [:]
        )
        #expect(loaded.configuration.tlsCertificatePath == certificate)
        #expect(loaded.configuration.tlsKeyPath == key)
        let equals = try await ConfigurationLoader.load(
            arguments: ["--listen-tls", "127.0.0.1:0", "--tls-cert=\(certificate)", "--tls-key", key],
            environment: [:]
        )
        #expect(equals.configuration.tlsCertificatePath == certificate)
        #expect(ConfigurationField(flag: "--tls-cert") == .tlsCertificate)
        #expect(ConfigurationField(flag: "--tls-crt") == nil)
    }

    @Test("no listener at all, and the same address twice, are errors")
    func listenerChecks() async {
        let none = await #expect(throws: ConfigurationError.self) {
            try await ConfigurationLoader.load(environment: ["PUSHRELAY_LISTEN": ""])
        }
        #expect(none?.problems.first?.field == .listen)
        let twice = await #expect(throws: ConfigurationError.self) {
            try await ConfigurationLoader.load(arguments: ["--listen", "127.0.0.1:80", "--listen", "127.0.0.1:80"], environment: [:])
        }
        #expect(twice?.problems.first?.message.contains("twice") == true)
    }

    @Test("repeated list flags add up; comma lists split")
    func repeatedListFlags() async throws {
        let loaded = try await ConfigurationLoader.load(
            arguments: ["--listen", "127.0.0.1:1", "--listen", "127.0.0.1:2,[::1]:3"],
            environment: [:]
        )
        #expect(loaded.configuration.listen.map(\.description) == ["127.0.0.1:1", "127.0.0.1:2", "[::1]:3"])
    }

    @Test("a bare boolean flag means true")
    func bareBooleanFlag() async throws {
        let loaded = try await ConfigurationLoader.load(
            arguments: ["--metrics-enabled", "--log-level", "debug"],
            environment: ["PUSHRELAY_METRICS_ENABLED": "false"]
        )
        #expect(loaded.configuration.metricsEnabled)
        #expect(loaded.configuration.logLevel == .debug)
    }

    @Test("unknown PUSHRELAY_ variables are warnings, not errors; privileged ports warn")
    func warnings() async throws {
        let loaded = try await ConfigurationLoader.load(
            arguments: ["--listen", "0.0.0.0:443"],
            environment: ["PUSHRELAY_LISTN": "x", "PUSHRELAY_BIN": "/bin/true"]
        )
        #expect(loaded.warnings.contains { $0.contains("PUSHRELAY_LISTN") })
        #expect(!loaded.warnings.contains { $0.contains("PUSHRELAY_BIN") })
        #expect(loaded.warnings.contains { $0.contains("CAP_NET_BIND_SERVICE") })
    }

    @Test("the effective configuration masks secrets and reads back as the same configuration")
    func renderRoundTrip() async throws {
        let file = fixtures.configFile("""
            postgres_url = "postgres://relay:s3cret@db/relay"
            listen = ["0.0.0.0:8080", "[::]:8080"]
            heartbeat_interval = "1h30m"
            max_send_body_size = "1MiB"
            log_format = "json"

            """)
        let loaded = try await ConfigurationLoader.load(arguments: ["--config", file], environment: [:])
        let text = loaded.renderEffective()
        #expect(!text.contains("s3cret"))
        #expect(text.contains("postgres://relay:****@db/relay"))
        #expect(text.contains("heartbeat_interval = \"1h30m\"  # \(file):3"))
        #expect(text.contains("# tls_certificate is not set"))
        // Without the secret line the output is a config file that loads to the same values.
        let rendered = text.split(separator: "\n").filter { !$0.hasPrefix("postgres_url") }.joined(separator: "\n")
        let reloaded = try await ConfigurationLoader.load(arguments: ["--config", fixtures.configFile(rendered)], environment: [:])
        var expected = loaded.configuration
        expected.postgresURL = nil
        #expect(reloaded.configuration == expected)
    }

    @Test("masking keeps the shape of a URL and hides the password")
    func masking() {
        #expect(PushRelayConfiguration.maskSecret("postgres://u:p@h/d") == "postgres://u:****@h/d")
        #expect(PushRelayConfiguration.maskSecret("postgres://u@h/d") == "postgres://u:****@h/d")
        #expect(PushRelayConfiguration.maskSecret("postgres://:s3cr3t@h/d") == "postgres://:****@h/d", "no user name: the password is not taken for one")
        #expect(PushRelayConfiguration.maskSecret("postgres://u:p:q@h/d") == "postgres://u:****@h/d")
        #expect(PushRelayConfiguration.maskSecret("postgres://h/d?sslmode=require&password=x") == "postgres://h/d?sslmode=require&password=****")
        #expect(PushRelayConfiguration.maskSecret("plain-secret") == "****")
    }

    @Test("the example deploy/pushrelay.conf is valid")
    func exampleConfig() async throws {
        let path = repositoryRoot + "/deploy/pushrelay.conf"
        let loaded = try await ConfigurationLoader.load(arguments: ["--config", path], environment: [:])
        #expect(loaded.configFile == path)
        #expect(loaded.configuration.store == .sqlite)
    }
}

/// The repository's root, from this file's path.
let repositoryRoot: String = {
    var components = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    components.removeLast(3)  // Tests/PushRelayServerTests/<file>
    return components.joined(separator: "/")
}()

@Suite("Configuration: printing and reload diff")
struct ConfigurationDescriptionTests {
    @Test("description, debugDescription and dump never show a secret")
    func noSecretInDescriptions() {
        var configuration = PushRelayConfiguration()
        configuration.postgresURL = "postgres://relay:s3cret@db/relay"
        var dumped = ""
        dump(configuration, to: &dumped)
        for text in ["\(configuration)", String(reflecting: configuration), dumped] {
            #expect(!text.contains("s3cret"), "\(text)")
            #expect(text.contains("postgres://relay:****@db/relay"), "\(text)")
        }
    }

    @Test("changedFields lists exactly the fields that differ, secrets compared unmasked")
    func changedFields() {
        let old = PushRelayConfiguration()
        var new = old
        #expect(new.changedFields(comparedTo: old).isEmpty)
        new.logLevel = .debug
        new.listen = [.init(host: "0.0.0.0", port: 8080)]
        new.postgresURL = "postgres://relay:a@db/relay"
        var newer = new
        newer.postgresURL = "postgres://relay:b@db/relay"
        #expect(new.changedFields(comparedTo: old) == [.listen, .postgresURL, .logLevel])
        #expect(newer.changedFields(comparedTo: new) == [.postgresURL])
        #expect(new.changedFields(comparedTo: old).filter { !$0.isReloadable } == [.listen, .postgresURL])
    }
}
