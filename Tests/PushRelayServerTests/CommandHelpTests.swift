import Foundation
import TestSupport
import Testing

/// Every command's `--help`, run as a process with the secrets an operator keeps in the environment.
@Suite("pushrelay --help", .tags(.peer))
struct CommandHelpTests {
    static let commands: [[String]] = [
        [], ["serve"], ["check-config"], ["listen"], ["register"], ["send"],
        ["store"], ["store", "init"], ["store", "migrate"],
        ["project"], ["project", "create"], ["project", "list"], ["project", "rotate-key"], ["project", "revoke-key"],
        ["project", "rotate-client-key"], ["project", "delete"], ["project", "service-account"],
        ["project", "service-account-keys"], ["project", "revoke-service-account-key"],
    ]

    /// ArgumentParser prints an option's default value in `--help`; a default taken from the environment would
    /// print the database password of `PUSHRELAY_POSTGRES_URL` (as `project list --help` and `store migrate --help`
    /// did).
    @Test("no --help prints the PostgreSQL URL from the environment", arguments: commands)
    func helpKeepsTheURLSecret(command: [String]) async throws {
        #expect(FileManager.default.isExecutableFile(atPath: pushrelayBinary), "build first: \(pushrelayBinary)")
        let result = try await ChildProcess.run(
            pushrelayBinary, command + ["--help"],
            environment: ["PUSHRELAY_POSTGRES_URL": "postgres://relay:hunter2@db.example/relay"]
        )
        #expect(result.status == 0, "\(command): \(result.stderr)")
        #expect(result.stdout.contains("USAGE: pushrelay"), "\(command)")
        #expect(!(result.stdout + result.stderr).contains("hunter2"), "\(command)")
    }
}
