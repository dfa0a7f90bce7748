import Configuration
import Foundation
import Logging
@testable import PushRelayServer
import Testing

/// The parts of the configuration that swift-configuration carries: its providers' key encodings against the field
/// table, the config file as a snapshot, and the reloading provider behind `serve`.
struct SwiftConfigurationTests {
    private let fixtures = ConfigurationTestFixtures.self

    @Test("each field's flag and variable are what swift-configuration's providers read for its key")
    func providerEncodingsMatchTheTable() {
        for field in ConfigurationField.allCases {
            let key = ConfigKey(field.configKey)
            let flags = ConfigReader(provider: CommandLineArgumentsProvider(arguments: ["pushrelay", field.flag, "v"]))
            #expect(flags.string(forKey: key) == "v", "\(field.flag)")
            let environment = ConfigReader(
                provider: EnvironmentVariablesProvider(environmentVariables: [field.environmentVariable: "v"])
                    .prefixKeys(with: "pushrelay"))
            #expect(environment.string(forKey: key) == "v", "\(field.environmentVariable)")
            #expect(ConfigurationField(configKey: field.configKey) == field)
        }
    }

    @Test("the file snapshot answers text from any scalar, lists from arrays or commas, and refuses a list for one value")
    func fileSnapshotConversions() throws {
        let file = try ConfigurationFile(contents: Array("""
            max_pending_messages = 50
            metrics_enabled = false
            listen = ["127.0.0.1:1", "127.0.0.1:2"]
            cors_allowed_origins = "https://a.example, https://b.example"
            postgres_url = "postgres://relay:hunter2@db/relay"
            log_level = ["debug"]
            """.utf8))
        func value(_ field: ConfigurationField, _ type: ConfigType) throws -> ConfigContent? {
            try file.value(forKey: AbsoluteConfigKey([field.configKey]), type: type).value?.content
        }
        #expect(try value(.maxPendingMessages, .string) == .string("50"))
        #expect(try value(.maxPendingMessages, .int) == .int(50))
        #expect(try value(.metricsEnabled, .bool) == .bool(false))
        #expect(try value(.metricsEnabled, .stringArray) == .stringArray(["false"]))
        #expect(try value(.listen, .stringArray) == .stringArray(["127.0.0.1:1", "127.0.0.1:2"]))
        #expect(try value(.corsAllowedOrigins, .stringArray) == .stringArray(["https://a.example", "https://b.example"]))
        #expect(try value(.idleTimeout, .string) == nil)
        #expect(throws: (any Error).self) { try value(.logLevel, .string) }
        #expect(try file.value(forKey: AbsoluteConfigKey([ConfigurationField.postgresURL.configKey]), type: .string)
            .value?.isSecret == true)
        #expect(!file.debugDescription.contains("hunter2"))
        #expect(file.line(of: "listen") == 3)
        #expect(throws: ConfigurationFile.SyntaxError.self) { try ConfigurationFile(contents: [0xFF, 0xFE]) }
    }

    @Test("a list in the file where one value belongs is a problem naming the file's line")
    func listForSingleValue() async {
        let file = fixtures.configFile("\nlog_level = [\"debug\"]\n")
        let error = await #expect(throws: ConfigurationError.self) {
            try await ConfigurationLoader.load(arguments: ["--config", file], environment: [:])
        }
        #expect(error?.problems.map(\.field) == [.logLevel])
        #expect(error?.problems.first?.source == .file(path: file, line: 2))
        #expect(error?.problems.first?.message == "expected a single value, not a list")
    }

    @Test("serve's live configuration: a reload sees the file as it is on disk, flags and environment as at start")
    func liveConfigurationReload() async throws {
        let file = fixtures.configFile("log_level = \"info\"\nidle_timeout = \"60s\"\n")
        let live = try await LiveConfiguration.load(
            arguments: ["--config", file, "--idle-timeout", "90s"],
            environment: ["PUSHRELAY_HEARTBEAT_INTERVAL": "20s"],
            logger: Logger(label: "test")
        )
        #expect(live.initial.configuration.logLevel == .info)
        #expect(live.initial.configuration.idleTimeout == .seconds(90))
        #expect(live.fileService != nil)
        #expect(live.reloadRequests != nil)

        try Data("log_level = \"debug\"\nidle_timeout = \"61s\"\n".utf8).write(to: URL(fileURLWithPath: file))
        // The provider is not running here (no SIGHUP reaches it), so it holds the old file: the file on disk counts.
        let reloaded = try await live.reloaded()
        #expect(reloaded.configuration.logLevel == .debug)
        #expect(reloaded.configuration.idleTimeout == .seconds(90))
        #expect(reloaded.configuration.heartbeatInterval == .seconds(20))
        #expect(reloaded.sources[.logLevel] == .file(path: file, line: 1))

        // A file that does not parse is refused, with its line.
        try Data("log_level = \"debug\"\nlisten = [\n".utf8).write(to: URL(fileURLWithPath: file))
        let error = await #expect(throws: ConfigurationError.self) { try await live.reloaded() }
        #expect(error?.problems.first?.code == .syntax)
        #expect(error?.problems.first?.source == .file(path: file, line: 2))
    }
}
