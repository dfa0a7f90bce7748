import ArgumentParser
import PushRelayServer

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// `pushrelay check-config [FILE] [--<field> value …]`: loads the configuration exactly as `serve` would, prints the
/// effective values (secrets masked) with where each came from, and exits 78 (`EX_CONFIG`) on any problem.
struct CheckConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate the configuration and print the effective values (secrets masked).",
        discussion: """
            Reads FILE (or --config FILE, or $PUSHRELAY_CONFIG), then PUSHRELAY_<FIELD> environment variables, \
            then the flags below; later ones win. Exits 0 when valid, 78 (EX_CONFIG) with one line per problem \
            otherwise.

            Fields (file key / flag):
            \(ConfigurationField.helpText)
            """
    )

    @Argument(
        parsing: .captureForPassthrough,
        help: ArgumentHelp("[FILE] [--<field> <value> …]", valueName: "arguments")
    )
    var arguments: [String] = []

    func run() async throws {
        // The arguments are captured for the loader, so help is recognised here.
        if arguments.contains("--help") || arguments.contains("-h") {
            throw CleanExit.helpRequest(Self.self)
        }
        var loaderArguments = arguments
        if let first = loaderArguments.first, !first.hasPrefix("-") {
            // One file: as FILE or as --config FILE, not both and not two FILEs.
            let rest = loaderArguments.dropFirst()
            let second = rest.first.flatMap { $0.hasPrefix("-") ? nil : $0 }
            if second != nil || rest.contains(where: { $0 == ConfigurationLoader.configFileFlag || $0.hasPrefix("--config=") }) {
                printError("pushrelay: invalid configuration (1 problem):")
                printError("  check-config reads one configuration file: give it as FILE or as --config FILE, once")
                throw ExitCode(78)
            }
            loaderArguments = [ConfigurationLoader.configFileFlag, first] + rest
        }
        let loaded: LoadedConfiguration
        do {
            loaded = try await ConfigurationLoader.load(
                arguments: loaderArguments,
                environment: ProcessInfo.processInfo.environment
            )
        } catch {
            let count = error.problems.count
            printError("pushrelay: invalid configuration (\(count) problem\(count == 1 ? "" : "s")):")
            for problem in error.problems {
                printError("  \(problem)")
            }
            throw ExitCode(78)
        }
        for warning in loaded.warnings {
            printError("pushrelay: warning: \(warning)")
        }
        // The certificate and key as `serve` loads them (a key that does not match, an encrypted key, a file
        // that is not PEM): refused here too, so that the unit's ExecStartPre stops a start that would fail.
        if let problem = RelayService.tlsProblem(loaded.configuration) {
            printError("pushrelay: invalid configuration (1 problem):")
            printError("  tls_certificate / tls_key: \(problem)")
            throw ExitCode(78)
        }
        print(loaded.renderEffective(), terminator: "")
    }

    private func printError(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }
}
