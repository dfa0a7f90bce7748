import Foundation
import TestSupport
import Testing

/// `pushrelay check-config` run as a process, as the unit's `ExecStartPre=` runs it.
@Suite("pushrelay check-config", .tags(.peer))
struct CheckConfigCommandTests {
    private func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> ChildProcessResult {
        #expect(FileManager.default.isExecutableFile(atPath: pushrelayBinary), "build first: \(pushrelayBinary)")
        return try await ChildProcess.run(pushrelayBinary, ["check-config"] + arguments, environment: environment)
    }

    @Test("a valid file: exit 0, the effective values with their sources, secrets masked")
    func valid() async throws {
        let file = ConfigurationTestFixtures.configFile("""
            listen = ["127.0.0.1:0"]
            postgres_url = "postgres://relay:hunter2@db/relay"

            """)
        let result = try await run([file, "--log-level", "debug"], environment: ["PUSHRELAY_IDLE_TIMEOUT": "90s"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("listen = [\"127.0.0.1:0\"]  # \(file):1"))
        #expect(result.stdout.contains("log_level = \"debug\"  # flag --log-level"))
        #expect(result.stdout.contains("idle_timeout = \"1m30s\"  # environment PUSHRELAY_IDLE_TIMEOUT"))
        #expect(result.stdout.contains("postgres://relay:****@db/relay"))
        #expect(!(result.stdout + result.stderr).contains("hunter2"))
    }

    @Test("invalid values: exit 78 and one line per problem naming field and source")
    func invalid() async throws {
        let file = ConfigurationTestFixtures.configFile("listen = [\"0.0.0.0:70000\"]\nbogus = 1\n")
        let result = try await run([file, "--heartbeat-interval", "-5s"], environment: ["PUSHRELAY_MAX_CONNECTIONS": "0"])
        #expect(result.status == 78)
        #expect(result.stdout.isEmpty)
        let errors = result.stderr
        #expect(errors.contains("invalid configuration (4 problems)"))
        #expect(errors.contains("\(file):1: listen: invalid port '70000'"))
        #expect(errors.contains("\(file):2: unknown key 'bogus'"))
        #expect(errors.contains("environment PUSHRELAY_MAX_CONNECTIONS: max_connections:"))
        #expect(errors.contains("flag --heartbeat-interval: heartbeat_interval: duration '-5s' is negative"))
    }

    @Test("the PostgreSQL timeouts: zero, negative or unit-less nonsense is exit 78 naming the field; a duration is shown with its source")
    func postgresTimeouts() async throws {
        let refused = try await run(
            ["--postgres-commit-timeout", "0s"], environment: ["PUSHRELAY_POSTGRES_STATEMENT_TIMEOUT": "-1s"])
        #expect(refused.status == 78, "\(refused)")
        #expect(refused.stderr.contains("invalid configuration (2 problems)"), "\(refused.stderr)")
        #expect(refused.stderr.contains(
            "flag --postgres-commit-timeout: postgres_commit_timeout: duration '0s' must be greater than zero"), "\(refused.stderr)")
        #expect(refused.stderr.contains(
            "environment PUSHRELAY_POSTGRES_STATEMENT_TIMEOUT: postgres_statement_timeout: duration '-1s' is negative"),
            "\(refused.stderr)")
        let file = ConfigurationTestFixtures.configFile("postgres_statement_timeout = \"soon\"\n")
        let unparsed = try await run([file])
        #expect(unparsed.status == 78 && unparsed.stderr.contains("\(file):1: postgres_statement_timeout:"), "\(unparsed)")

        let accepted = try await run(["--postgres-commit-timeout", "2s"], environment: ["PUSHRELAY_POSTGRES_STATEMENT_TIMEOUT": "1m"])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(accepted.stdout.contains("postgres_commit_timeout = \"2s\"  # flag --postgres-commit-timeout"), "\(accepted.stdout)")
        #expect(accepted.stdout.contains(
            "postgres_statement_timeout = \"1m\"  # environment PUSHRELAY_POSTGRES_STATEMENT_TIMEOUT"), "\(accepted.stdout)")
    }

    @Test("a missing file, or two: exit 78 naming the problem; --help lists every field")
    func missingFileAndHelp() async throws {
        let missing = try await run(["/nonexistent/pushrelay.conf"])
        #expect(missing.status == 78)
        #expect(missing.stderr.contains("/nonexistent/pushrelay.conf"))
        // Two files (or FILE and --config FILE): named as such, not as a --config without a path.
        let file = ConfigurationTestFixtures.configFile("listen = [\"127.0.0.1:0\"]\n")
        for twice in [[file, file], [file, "--config", file]] {
            let result = try await run(twice)
            #expect(result.status == 78, "\(result)")
            #expect(result.stderr.contains("reads one configuration file") && !result.stderr.contains("needs"), "\(result.stderr)")
        }
        let help = try await run(["--help"])
        #expect(help.status == 0)
        for key in ["listen_tls", "heartbeat_interval", "max_connections", "shutdown_drain_timeout"] {
            #expect(help.stdout.contains(key))
        }
    }

    @Test("a certificate and key serve would refuse (a key of another pair) are refused: exit 78 naming the problem")
    func tlsFilesAsServeLoadsThem() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("check-tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for name in ["a", "b"] {
            let made = try await ChildProcess.run("openssl", [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                "-subj", "/CN=localhost", "-keyout", "\(directory)/\(name).key", "-out", "\(directory)/\(name).pem",
            ])
            #expect(made.status == 0, "\(made.stderr)")
        }
        func check(key: String) async throws -> ChildProcessResult {
            let file = ConfigurationTestFixtures.configFile("""
                listen_tls = ["127.0.0.1:0"]
                tls_certificate = "\(directory)/a.pem"
                tls_key = "\(directory)/\(key)"

                """)
            return try await run([file])
        }
        let good = try await check(key: "a.key")
        #expect(good.status == 0, "\(good.stderr)")
        let mismatched = try await check(key: "b.key")
        #expect(mismatched.status == 78, "\(mismatched)")
        #expect(mismatched.stderr.contains("tls_certificate / tls_key"), "\(mismatched.stderr)")
    }
}
