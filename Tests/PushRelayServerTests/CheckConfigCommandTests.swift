import Foundation
import Testing

/// `pushrelay check-config` run as a process, as the unit's `ExecStartPre=` runs it.
@Suite("pushrelay check-config")
struct CheckConfigCommandTests {
    private func run(_ arguments: [String], environment: [String: String] = [:]) throws -> ProcessResult {
        #expect(FileManager.default.isExecutableFile(atPath: pushrelayBinary), "build first: \(pushrelayBinary)")
        return try ProcessRunner.run(pushrelayBinary, ["check-config"] + arguments, environment: environment)
    }

    @Test("a valid file: exit 0, the effective values with their sources, secrets masked")
    func valid() throws {
        let file = ConfigurationTestFixtures.configFile("""
            listen = ["127.0.0.1:0"]
            postgres_url = "postgres://relay:hunter2@db/relay"

            """)
        let result = try run([file, "--log-level", "debug"], environment: ["PUSHRELAY_IDLE_TIMEOUT": "90s"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("listen = [\"127.0.0.1:0\"]  # \(file):1"))
        #expect(result.standardOutput.contains("log_level = \"debug\"  # flag --log-level"))
        #expect(result.standardOutput.contains("idle_timeout = \"1m30s\"  # environment PUSHRELAY_IDLE_TIMEOUT"))
        #expect(result.standardOutput.contains("postgres://relay:****@db/relay"))
        #expect(!(result.standardOutput + result.standardError).contains("hunter2"))
    }

    @Test("invalid values: exit 78 and one line per problem naming field and source")
    func invalid() throws {
        let file = ConfigurationTestFixtures.configFile("listen = [\"0.0.0.0:70000\"]\nbogus = 1\n")
        let result = try run([file, "--heartbeat-interval", "-5s"], environment: ["PUSHRELAY_MAX_CONNECTIONS": "0"])
        #expect(result.status == 78)
        #expect(result.standardOutput.isEmpty)
        let errors = result.standardError
        #expect(errors.contains("invalid configuration (4 problems)"))
        #expect(errors.contains("\(file):1: listen: invalid port '70000'"))
        #expect(errors.contains("\(file):2: unknown key 'bogus'"))
        #expect(errors.contains("environment PUSHRELAY_MAX_CONNECTIONS: max_connections:"))
        #expect(errors.contains("flag --heartbeat-interval: heartbeat_interval: duration '-5s' is negative"))
    }

    @Test("a missing file: exit 78 naming the path; --help lists every field")
    func missingFileAndHelp() throws {
        let missing = try run(["/nonexistent/pushrelay.conf"])
        #expect(missing.status == 78)
        #expect(missing.standardError.contains("/nonexistent/pushrelay.conf"))
        let help = try run(["--help"])
        #expect(help.status == 0)
        for key in ["listen_tls", "heartbeat_interval", "max_connections", "shutdown_drain_timeout"] {
            #expect(help.standardOutput.contains(key))
        }
    }
}
