@testable import PushRelayServer
import Testing

private let fixtures = ConfigurationTestFixtures.self

@Suite("Configuration loader")
struct ConfigurationLoaderTests {
    @Test("defaults: documented values, data_dir from STATE_DIRECTORY")
    func defaults() throws {
        let loaded = try ConfigurationLoader.load(environment: [:])
        let config = loaded.configuration
        #expect(config.listen == [.init(host: "127.0.0.1", port: 8080)])
        #expect(config.listenTLS.isEmpty)
        #expect(config.heartbeatInterval == .seconds(25))
        #expect(config.maxPendingMessages == 100)
        #expect(config.maxCollapseKeys == 4)
        #expect(config.serverKeyRotationGrace == .seconds(86_400))
        #expect(config.dataDirectory == "/var/lib/pushrelay")
        #expect(loaded.configFile == nil)
        let systemd = try ConfigurationLoader.load(environment: ["STATE_DIRECTORY": "/var/lib/private/pushrelay"])
        #expect(systemd.configuration.dataDirectory == "/var/lib/private/pushrelay")
    }

    @Test("the file is found through PUSHRELAY_CONFIG, and --config beats it")
    func configFileSelection() throws {
        let first = fixtures.configFile("heartbeat_interval = \"11s\"\n")
        let second = fixtures.configFile("heartbeat_interval = \"12s\"\n")
        let viaEnvironment = try ConfigurationLoader.load(environment: ["PUSHRELAY_CONFIG": first])
        #expect(viaEnvironment.configuration.heartbeatInterval == .seconds(11))
        #expect(viaEnvironment.configFile == first)
        let viaFlag = try ConfigurationLoader.load(arguments: ["--config", second], environment: ["PUSHRELAY_CONFIG": first])
        #expect(viaFlag.configuration.heartbeatInterval == .seconds(12))
    }

    @Test("an unknown key in the file is an error with its line and a suggestion")
    func unknownKey() {
        let file = fixtures.configFile("listen = [\"127.0.0.1:1\"]\nheartbeat_intervall = \"5s\"\n")
        let error = #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(arguments: ["--config", file], environment: [:])
        }
        #expect(error?.problems.first?.code == .unknownKey)
        #expect(error?.problems.first?.source == .file(path: file, line: 2))
        #expect(error?.description.contains("did you mean heartbeat_interval?") == true)
    }

    @Test("store = postgres needs a usable postgres_url; the reason never shows the password")
    func postgresStoreNeedsURL() throws {
        let missing = #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(arguments: ["--store", "postgres"], environment: [:])
        }
        #expect(missing?.problems.map(\.field) == [.postgresURL])
        let unsupported = #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(
                arguments: ["--store", "postgres", "--postgres-url", "postgres://relay:hunter2@db/relay?sslmode=require"],
                environment: [:])
        }
        #expect(unsupported?.problems.map(\.field) == [.postgresURL])
        #expect(unsupported?.problems.first?.description.contains("hunter2") == false)
        let loaded = try ConfigurationLoader.load(
            arguments: ["--store", "postgres", "--postgres-url", "postgres://relay:hunter2@db/relay"], environment: [:])
        #expect(loaded.configuration.store == .postgres)
    }

    @Test("an unknown flag, a flag without value and a stray argument are errors")
    func unknownFlags() {
        let error = #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(arguments: ["--lisen", "x:1", "stray", "--heartbeat-interval"], environment: [:])
        }
        let codes = error?.problems.map(\.code) ?? []
        #expect(codes == [.unknownFlag, .unknownFlag, .missingValue])
        #expect(error?.problems.first?.description.contains("did you mean --listen?") == true)
        #expect(error?.problems.last?.field == .heartbeatInterval)
    }

    @Test("all problems are reported at once, in source order")
    func collectsAllProblems() {
        let file = fixtures.configFile("max_connections = 0\n")
        let error = #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(
                arguments: ["--config", file, "--log-level", "loud"],
                environment: ["PUSHRELAY_IDLE_TIMEOUT": "-1s"]
            )
        }
        #expect(error?.problems.map(\.field) == [.maxConnections, .idleTimeout, .logLevel])
    }

    @Test("a missing or unreadable config file names the path")
    func unreadableFile() {
        for path in [fixtures.path("nope.conf"), fixtures.path("data")] {
            let error = #expect(throws: ConfigurationError.self) {
                try ConfigurationLoader.load(arguments: ["--config", path], environment: [:])
            }
            #expect(error?.problems.first?.code == .unreadableFile)
            #expect(error?.description.contains(path) == true)
        }
    }

    @Test("listen_tls without certificate and key: both are named as missing")
    func tlsNeedsFiles() {
        let error = #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(arguments: ["--listen-tls", "0.0.0.0:8443"], environment: [:])
        }
        #expect(error?.problems.map(\.field) == [.tlsCertificate, .tlsKey])
        #expect(error?.problems.allSatisfy { $0.code == .missingValue } == true)
    }

    @Test("--tls-cert is accepted for --tls-certificate")
    func tlsCertAlias() throws {
        let certificate = fixtures.path("cert-a.pem")
        let key = fixtures.path("key-a.pem")
        let loaded = try ConfigurationLoader.load(
            arguments: ["--listen-tls", "127.0.0.1:0", "--tls-cert", certificate, "--tls-key", key],
            environment: [:]
        )
        #expect(loaded.configuration.tlsCertificatePath == certificate)
        #expect(loaded.configuration.tlsKeyPath == key)
        let equals = try ConfigurationLoader.load(
            arguments: ["--listen-tls", "127.0.0.1:0", "--tls-cert=\(certificate)", "--tls-key", key],
            environment: [:]
        )
        #expect(equals.configuration.tlsCertificatePath == certificate)
        #expect(ConfigurationField(flag: "--tls-cert") == .tlsCertificate)
        #expect(ConfigurationField(flag: "--tls-crt") == nil)
    }

    @Test("no listener at all, and the same address twice, are errors")
    func listenerChecks() {
        let none = #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(environment: ["PUSHRELAY_LISTEN": ""])
        }
        #expect(none?.problems.first?.field == .listen)
        let twice = #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(arguments: ["--listen", "127.0.0.1:80", "--listen", "127.0.0.1:80"], environment: [:])
        }
        #expect(twice?.problems.first?.message.contains("twice") == true)
    }

    @Test("repeated list flags add up; comma lists split")
    func repeatedListFlags() throws {
        let loaded = try ConfigurationLoader.load(
            arguments: ["--listen", "127.0.0.1:1", "--listen", "127.0.0.1:2,[::1]:3"],
            environment: [:]
        )
        #expect(loaded.configuration.listen.map(\.description) == ["127.0.0.1:1", "127.0.0.1:2", "[::1]:3"])
    }

    @Test("a bare boolean flag means true")
    func bareBooleanFlag() throws {
        let loaded = try ConfigurationLoader.load(
            arguments: ["--metrics-enabled", "--log-level", "debug"],
            environment: ["PUSHRELAY_METRICS_ENABLED": "false"]
        )
        #expect(loaded.configuration.metricsEnabled)
        #expect(loaded.configuration.logLevel == .debug)
    }

    @Test("unknown PUSHRELAY_ variables are warnings, not errors; privileged ports warn")
    func warnings() throws {
        let loaded = try ConfigurationLoader.load(
            arguments: ["--listen", "0.0.0.0:443"],
            environment: ["PUSHRELAY_LISTN": "x", "PUSHRELAY_BIN": "/bin/true"]
        )
        #expect(loaded.warnings.contains { $0.contains("PUSHRELAY_LISTN") })
        #expect(!loaded.warnings.contains { $0.contains("PUSHRELAY_BIN") })
        #expect(loaded.warnings.contains { $0.contains("CAP_NET_BIND_SERVICE") })
    }

    @Test("the effective configuration masks secrets and reads back as the same configuration")
    func renderRoundTrip() throws {
        let file = fixtures.configFile("""
            postgres_url = "postgres://relay:s3cret@db/relay"
            listen = ["0.0.0.0:8080", "[::]:8080"]
            heartbeat_interval = "1h30m"
            max_send_body_size = "1MiB"
            log_format = "json"

            """)
        let loaded = try ConfigurationLoader.load(arguments: ["--config", file], environment: [:])
        let text = loaded.renderEffective()
        #expect(!text.contains("s3cret"))
        #expect(text.contains("postgres://relay:****@db/relay"))
        #expect(text.contains("heartbeat_interval = \"1h30m\"  # \(file):3"))
        #expect(text.contains("# tls_certificate is not set"))
        // Without the secret line the output is a config file that loads to the same values.
        let rendered = text.split(separator: "\n").filter { !$0.hasPrefix("postgres_url") }.joined(separator: "\n")
        let reloaded = try ConfigurationLoader.load(arguments: ["--config", fixtures.configFile(rendered)], environment: [:])
        var expected = loaded.configuration
        expected.postgresURL = nil
        #expect(reloaded.configuration == expected)
    }

    @Test("masking keeps the shape of a URL and hides the password")
    func masking() {
        #expect(PushRelayConfiguration.maskSecret("postgres://u:p@h/d") == "postgres://u:****@h/d")
        #expect(PushRelayConfiguration.maskSecret("postgres://u@h/d") == "postgres://u:****@h/d")
        #expect(PushRelayConfiguration.maskSecret("postgres://h/d?sslmode=require&password=x") == "postgres://h/d?sslmode=require&password=****")
        #expect(PushRelayConfiguration.maskSecret("plain-secret") == "****")
    }

    @Test("the example deploy/pushrelay.conf is valid")
    func exampleConfig() throws {
        let path = repositoryRoot + "/deploy/pushrelay.conf"
        let loaded = try ConfigurationLoader.load(arguments: ["--config", path], environment: [:])
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
