@testable import PushRelayServer
import Testing

/// One row per configuration field: three distinct valid values (file, environment, flag), how each renders, and
/// values that must be rejected.
struct FieldCase: Sendable, CustomTestStringConvertible {
    var field: ConfigurationField
    /// The value as written in the config file (TOML syntax) and how it renders.
    var file: (text: String, rendered: String)
    /// The environment variable's value and how it renders.
    var environment: (text: String, rendered: String)
    /// The flag's value and how it renders.
    var flag: (text: String, rendered: String)
    /// Values rejected from every source (written as a string in the file).
    var invalid: [String]
    /// Environment that the field needs to validate (e.g. certificate files for `listen_tls`).
    var baseline: [String: String] = [:]

    var testDescription: String { field.key }
}

private let fixtures = ConfigurationTestFixtures.self

let fieldCases: [FieldCase] = [
    FieldCase(
        field: .listen,
        file: (#"["0.0.0.0:80", "[::]:80"]"#, #"["0.0.0.0:80", "[::]:80"]"#),
        environment: ("127.0.0.1:9000, [::1]:9000", #"["127.0.0.1:9000", "[::1]:9000"]"#),
        flag: ("localhost:0", #"["localhost:0"]"#),
        invalid: ["0.0.0.0:99999", "0.0.0.0:-1", "0.0.0.0", ":8080", "::1:8080", "[::1]8080", "host:http", "[::1:80"]
    ),
    FieldCase(
        field: .listenTLS,
        file: (#"["0.0.0.0:443"]"#, #"["0.0.0.0:443"]"#),
        environment: ("[::]:8443", #"["[::]:8443"]"#),
        flag: ("127.0.0.1:0", #"["127.0.0.1:0"]"#),
        invalid: ["0.0.0.0:65536", "nohost", "0.0.0.0:port"],
        baseline: [
            "PUSHRELAY_TLS_CERTIFICATE": fixtures.path("cert-a.pem"),
            "PUSHRELAY_TLS_KEY": fixtures.path("key-a.pem"),
        ]
    ),
    FieldCase(
        field: .tlsCertificate,
        file: ("\"\(fixtures.path("cert-a.pem"))\"", "\"\(fixtures.path("cert-a.pem"))\""),
        environment: (fixtures.path("cert-b.pem"), "\"\(fixtures.path("cert-b.pem"))\""),
        flag: (fixtures.path("cert-c.pem"), "\"\(fixtures.path("cert-c.pem"))\""),
        invalid: [fixtures.path("missing.pem"), fixtures.path("data")]
    ),
    FieldCase(
        field: .tlsKey,
        file: ("\"\(fixtures.path("key-a.pem"))\"", "\"\(fixtures.path("key-a.pem"))\""),
        environment: (fixtures.path("key-b.pem"), "\"\(fixtures.path("key-b.pem"))\""),
        flag: (fixtures.path("key-c.pem"), "\"\(fixtures.path("key-c.pem"))\""),
        invalid: [fixtures.path("missing-key.pem"), fixtures.path("data")]
    ),
    FieldCase(
        field: .dataDir,
        file: (#""/srv/pushrelay""#, #""/srv/pushrelay""#),
        environment: ("/var/lib/relay-env", #""/var/lib/relay-env""#),
        flag: (fixtures.path("data"), "\"\(fixtures.path("data"))\""),
        invalid: ["", "   ", fixtures.path("plain-file")]
    ),
    FieldCase(
        field: .store,
        file: (#""sqlite""#, #""sqlite""#),
        environment: ("SQLite", #""sqlite""#),
        flag: ("sqlite", #""sqlite""#),
        invalid: ["mysql", ""]
    ),
    FieldCase(
        field: .postgresURL,
        file: (#""postgres://relay:filepw@db/relay""#, #""postgres://relay:****@db/relay""#),
        environment: ("postgresql://relay:envpw@db:5432/relay", #""postgresql://relay:****@db:5432/relay""#),
        flag: ("postgres://db/relay?password=flagpw", #""postgres://db/relay?password=****""#),
        invalid: ["mysql://relay:pw@db/relay", "relay:pw@db"]
    ),
    FieldCase(
        field: .postgresCommitTimeout,
        file: (#""2s""#, #""2s""#),
        environment: ("500ms", #""500ms""#),
        flag: ("1m", #""1m""#),
        invalid: ["0", "0s", "-1s", "soon", "5x", "1099511627775d"]
    ),
    FieldCase(
        field: .postgresStatementTimeout,
        file: (#""5s""#, #""5s""#),
        environment: ("2m", #""2m""#),
        flag: ("250ms", #""250ms""#),
        invalid: ["0", "-30s", "never", "10y"]
    ),
    FieldCase(
        field: .postgresConnectTimeout,
        file: (#""2s""#, #""2s""#),
        environment: ("750ms", #""750ms""#),
        flag: ("30s", #""30s""#),
        invalid: ["0", "-5s", "later", "1099511627775d"]
    ),
    FieldCase(
        field: .postgresReadTimeout,
        file: (#""10s""#, #""10s""#),
        environment: ("1m", #""1m""#),
        flag: ("1500ms", #""1s500ms""#),
        invalid: ["0s", "-1s", "5x", ""]
    ),
    FieldCase(
        field: .postgresReadConnections,
        file: ("2", "2"),
        environment: ("16", "16"),
        flag: ("1", "1"),
        invalid: ["0", "-1", "1025", "many"]
    ),
    FieldCase(
        field: .heartbeatInterval,
        file: (#""30s""#, #""30s""#),
        environment: ("1m", #""1m""#),
        flag: ("1500ms", #""1s500ms""#),
        invalid: ["-5s", "0", "0s", "5 parsecs", "5x", "s", "", "1.5s"]
    ),
    FieldCase(
        field: .idleTimeout,
        file: ("300", #""5m""#),
        environment: ("2h", #""2h""#),
        flag: ("1h30m", #""1h30m""#),
        invalid: ["-1", "0ms", "forever"]
    ),
    FieldCase(
        field: .maxSendBodySize,
        file: ("1048576", #""1MiB""#),
        environment: ("64KiB", #""64KiB""#),
        flag: ("4097", #""4097""#),
        invalid: ["-1", "0", "1TiB", "3GiB", "2GiB", "2147483648", "big"]
    ),
    FieldCase(
        field: .maxRequestBodySize,
        file: (#""128KiB""#, #""128KiB""#),
        environment: ("2MiB", #""2MiB""#),
        flag: ("1000", #""1000""#),
        invalid: ["-64KiB", "0KiB", "lots"]
    ),
    FieldCase(
        field: .maxBufferedBodySize,
        file: (#""32MiB""#, #""32MiB""#),
        environment: ("1GiB", #""1GiB""#),
        flag: ("500000", #""500000""#),
        invalid: ["-1MiB", "0MiB", "lots"]
    ),
    FieldCase(
        field: .maxPendingMessages,
        file: ("200", "200"),
        environment: ("1_000", "1000"),
        flag: ("50", "50"),
        invalid: ["0", "-1", "100001", "many", "1.5"]
    ),
    FieldCase(
        field: .maxCollapseKeys,
        file: ("8", "8"),
        environment: ("1", "1"),
        flag: ("16", "16"),
        invalid: ["0", "-4", "1001", "four"]
    ),
    FieldCase(
        field: .purgeInterval,
        file: (#""10m""#, #""10m""#),
        environment: ("30", #""30s""#),
        flag: ("1h", #""1h""#),
        invalid: ["-1m", "0s", "sometimes"]
    ),
    FieldCase(
        field: .serverKeyRotationGrace,
        file: (#""48h""#, #""48h""#),
        environment: ("2d", #""48h""#),
        flag: ("90m", #""1h30m""#),
        invalid: ["-24h", "0h", "a day"]
    ),
    FieldCase(
        field: .authRecheckInterval,
        file: (#""1s""#, #""1s""#),
        environment: ("0", #""0s""#),
        flag: ("100ms", #""100ms""#),
        invalid: ["-1s", "soon", "5x"]
    ),
    FieldCase(
        field: .logLevel,
        file: (#""debug""#, #""debug""#),
        environment: ("WARNING", #""warning""#),
        flag: ("trace", #""trace""#),
        invalid: ["verbose", "", "info,debug"]
    ),
    FieldCase(
        field: .logFormat,
        file: (#""json""#, #""json""#),
        environment: ("text", #""text""#),
        flag: ("json", #""json""#),
        invalid: ["xml", "logfmt"]
    ),
    FieldCase(
        field: .metricsEnabled,
        file: ("false", "false"),
        environment: ("yes", "true"),
        flag: ("off", "false"),
        invalid: ["maybe", "2", ""]
    ),
    FieldCase(
        field: .metricsInterval,
        file: (#""30s""#, #""30s""#),
        environment: ("5", #""5s""#),
        flag: ("1m", #""1m""#),
        invalid: ["-1s", "0s", "often"]
    ),
    FieldCase(
        field: .shutdownDrainTimeout,
        file: (#""5s""#, #""5s""#),
        environment: ("45s", #""45s""#),
        flag: ("2m", #""2m""#),
        invalid: ["-20s", "0", "now"]
    ),
    FieldCase(
        field: .maxConnections,
        file: ("1000", "1000"),
        environment: ("50000", "50000"),
        flag: ("10", "10"),
        invalid: ["0", "-10", "10000001", "unlimited"]
    ),
    FieldCase(
        field: .maxConnectionsPerAddress,
        file: ("16", "16"),
        environment: ("0", "0"),
        flag: ("4", "4"),
        invalid: ["-1", "10000001", "many"]
    ),
    FieldCase(
        field: .eventLoops,
        file: ("1", "1"),
        environment: ("0", "0"),
        flag: ("4", "4"),
        invalid: ["-1", "1025", "all"]
    ),
    FieldCase(
        field: .commitOnEventLoop,
        file: ("true", "true"),
        environment: ("no", "false"),
        flag: ("on", "true"),
        invalid: ["maybe", "2", ""],
        baseline: ["PUSHRELAY_EVENT_LOOPS": "1"]
    ),
    FieldCase(
        field: .requestTimeout,
        file: (#""10s""#, #""10s""#),
        environment: ("5", #""5s""#),
        flag: ("1m", #""1m""#),
        invalid: ["-1s", "0s", "soon"]
    ),
    FieldCase(
        field: .deviceMessageRate,
        file: ("60", "60"),
        environment: ("0", "0"),
        flag: ("1000", "1000"),
        invalid: ["-1", "1000001", "fast"]
    ),
    FieldCase(
        field: .topicMessageRate,
        file: ("10", "10"),
        environment: ("0", "0"),
        flag: ("5000", "5000"),
        invalid: ["-5", "2000000", "slow"]
    ),
    FieldCase(
        field: .projectMessageRate,
        file: ("1000", "1000"),
        environment: ("0", "0"),
        flag: ("600000", "600000"),
        invalid: ["-3", "1000000001", "lots"]
    ),
    FieldCase(
        field: .registrationRate,
        file: ("120", "120"),
        environment: ("0", "0"),
        flag: ("6000", "6000"),
        invalid: ["-1", "1000001", "many"]
    ),
    FieldCase(
        field: .registrationRatePerAddress,
        file: ("30", "30"),
        environment: ("0", "0"),
        flag: ("300", "300"),
        invalid: ["-2", "9999999", "lots"]
    ),
    FieldCase(
        field: .maxDevicesPerProject,
        file: ("5000", "5000"),
        environment: ("0", "0"),
        flag: ("2", "2"),
        invalid: ["-1", "1000000001", "all"]
    ),
    FieldCase(
        field: .deviceExpiry,
        file: (#""30d""#, #""720h""#),
        environment: ("0", #""0""#),
        flag: ("12h", #""12h""#),
        invalid: ["-1d", "soon", "5x"]
    ),
    FieldCase(
        field: .corsAllowedOrigins,
        file: (#"["https://shop.example.com", "http://localhost:3000"]"#,
               #"["https://shop.example.com", "http://localhost:3000"]"#),
        environment: ("https://a.example, https://b.example:8443", #"["https://a.example", "https://b.example:8443"]"#),
        flag: ("*", #"["*"]"#),
        invalid: ["shop.example.com", "https://shop.example.com/", "ftp://x", "https://Shop.example.com", "https://"]
    ),
    FieldCase(
        field: .publicURL,
        file: ("\"https://push.example.com/\"", "\"https://push.example.com\""),
        environment: ("http://10.0.0.5:8080", "\"http://10.0.0.5:8080\""),
        flag: ("https://relay.example:8443", "\"https://relay.example:8443\""),
        invalid: ["push.example.com", "ftp://x", "http://a b"]
    ),
]

extension String {
    fileprivate func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        var result = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}

@Suite("Configuration: every field")
struct ConfigurationFieldTests {
    @Test("the table covers every field exactly once")
    func tableCoversEveryField() {
        #expect(fieldCases.map(\.field) == ConfigurationField.allCases)
    }

    @Test("default, then file, then environment, then flag wins", arguments: fieldCases)
    func precedence(_ row: FieldCase) async throws {
        let field = row.field
        let file = fixtures.configFile("# test\n\(field.key) = \(row.file.text)\n")
        var environment = row.baseline

        // Defaults only.
        let defaults = try await ConfigurationLoader.load(environment: environment)
        #expect(defaults.sources[field] == .defaultValue)
        #expect(
            defaults.configuration.renderedValue(of: field)
                == PushRelayConfiguration(environment: environment).renderedValue(of: field)
        )

        // The file beats the default.
        let fromFile = try await ConfigurationLoader.load(arguments: ["--config", file], environment: environment)
        #expect(fromFile.configuration.renderedValue(of: field) == row.file.rendered)
        #expect(fromFile.sources[field] == .file(path: file, line: 2))
        if field != .store {  // sqlite is the only valid store and the default
            #expect(fromFile.configuration.renderedValue(of: field) != defaults.configuration.renderedValue(of: field))
        }

        // The environment beats the file.
        environment[field.environmentVariable] = row.environment.text
        let fromEnvironment = try await ConfigurationLoader.load(arguments: ["--config", file], environment: environment)
        #expect(fromEnvironment.configuration.renderedValue(of: field) == row.environment.rendered)
        #expect(fromEnvironment.sources[field] == .environment(variable: field.environmentVariable))

        // The flag beats the environment, in both spellings.
        for arguments in [["--config", file, field.flag, row.flag.text], ["--config=\(file)", "\(field.flag)=\(row.flag.text)"]] {
            let fromFlag = try await ConfigurationLoader.load(arguments: arguments, environment: environment)
            #expect(fromFlag.configuration.renderedValue(of: field) == row.flag.rendered)
            #expect(fromFlag.sources[field] == .commandLine(flag: field.flag))
        }

        // Every other field kept its default.
        for other in ConfigurationField.allCases where other != field && row.baseline[other.environmentVariable] == nil {
            #expect(fromFile.sources[other] == .defaultValue, "\(other.key)")
        }
    }

    @Test("invalid values are rejected from every source, naming the field and the source", arguments: fieldCases)
    func invalidValues(_ row: FieldCase) async {
        let field = row.field
        for value in row.invalid {
            let escaped = value.replacingOccurrences("\\", "\\\\").replacingOccurrences("\"", "\\\"")
            let file = fixtures.configFile("\n\n\(field.key) = \"\(escaped)\"\n")
            let environment = row.baseline
            let attempts: [(arguments: [String], environment: [String: String], source: ConfigurationSource)] = [
                (["--config", file], environment, .file(path: file, line: 3)),
                ([], environment.merging([field.environmentVariable: value]) { $1 },
                 .environment(variable: field.environmentVariable)),
                (["\(field.flag)=\(value)"], environment, .commandLine(flag: field.flag)),
            ]
            for attempt in attempts {
                let error = await #expect(throws: ConfigurationError.self, "\(field.key) = '\(value)' from \(attempt.source)") {
                    try await ConfigurationLoader.load(arguments: attempt.arguments, environment: attempt.environment)
                }
                let problem = error?.problems.first
                #expect(problem?.field == field, "\(field.key) = '\(value)': \(String(describing: error))")
                #expect(problem?.source == attempt.source, "\(field.key) = '\(value)': \(String(describing: error))")
                #expect(problem.map { "\($0)" }?.contains(field.key) == true)
                if field.isSecret {
                    #expect(!(error.map { "\($0)" } ?? "").contains("pw@"), "a secret leaked into the error")
                }
            }
        }
    }

    @Test("every field has a distinct key, environment variable and flag, each mapping back")
    func namesAreConsistent() {
        for field in ConfigurationField.allCases {
            #expect(ConfigurationField(key: field.key) == field)
            #expect(ConfigurationField(flag: field.flag) == field)
            #expect(field.environmentVariable == "PUSHRELAY_" + field.key.uppercased())
            #expect(!field.summary.isEmpty)
        }
        #expect(Set(ConfigurationField.allCases.map(\.flag)).count == ConfigurationField.allCases.count)
    }
}

@Suite("Configuration values: durations")
struct ConfigurationDurationTests {
    @Test("the longest duration is 100 years, and the refusal says so (longer ones overflowed where used, a crash)")
    func longestDuration() throws {
        #expect(try ConfigurationValueParser.duration(.string("36500d")) == .seconds(36_500 * 86_400))
        #expect(try ConfigurationValueParser.duration(.string("36499d23h59m59s999ms")) < .seconds(36_500 * 86_400))
        for text in ["36500d1ms", "1099511627775d", String(repeating: "1099511627775d", count: 2000), "9223372036854775807"] {
            #expect(throws: ConfigurationValueParser.Failure("duration '\(text)' is too large: at most 36500d (100 years)")) {
                try ConfigurationValueParser.duration(.string(text))
            }
        }
        #expect(PushRelayConfiguration.renderDuration(ConfigurationValueParser.longestDuration) == "876000h")
    }
}

@Suite("Configuration values: sizes")
struct ConfigurationSizeTests {
    @Test("the largest size is 2 GiB − 1 byte, and the refusal says so")
    func largestSize() throws {
        #expect(try ConfigurationValueParser.size(.string("2147483647")) == Int(Int32.max))
        #expect(try ConfigurationValueParser.size(.string("1GiB")) == 1 << 30)
        #expect(throws: ConfigurationValueParser.Failure(
            "size '2GiB' is too large: less than 2GiB (at most 2147483647 bytes)")) {
            try ConfigurationValueParser.size(.string("2GiB"))
        }
    }
}
