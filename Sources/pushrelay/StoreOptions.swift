import ArgumentParser
import Foundation
import Logging
import PushRelayCore
import PushRelayServer
import PushRelayStore

/// Where a CLI command finds the store, as `serve` does, read by the same loader: `--data-dir` for SQLite, or
/// `--store postgres` with `--postgres-url`; else the `PUSHRELAY_DATA_DIR`, `PUSHRELAY_STORE`,
/// `PUSHRELAY_POSTGRES_URL` variables; else the configuration file's `data_dir`, `store` and `postgres_url`
/// (`--config FILE` or `PUSHRELAY_CONFIG`); else the defaults. The PostgreSQL timeouts and read pool
/// (`postgres_commit_timeout`, `postgres_statement_timeout`, `postgres_connect_timeout`, `postgres_read_timeout`,
/// `postgres_read_connections`) are read the same way. The store is shared with running daemons, which see
/// changes at once.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: "The daemon's data directory (holds pushrelay.sqlite). Default: data_dir.")
    var dataDir: String?

    @Option(name: .long, help: "The store engine: sqlite or postgres. Default: store.")
    var store: String?

    /// No default value in the declaration: ArgumentParser prints a default in `--help`, and this one holds the
    /// database password.
    @Option(
        name: .customLong("postgres-url"),
        help: "The PostgreSQL URL with --store postgres (a secret: prefer PUSHRELAY_POSTGRES_URL)."
    )
    var postgresURLOption: String?

    @Option(
        name: .customLong("config"),
        help: "The daemon's configuration file (or $PUSHRELAY_CONFIG): its data_dir, store and postgres_url apply."
    )
    var configFile: String?

    func validate() throws {
        if let store = self.store, store != "sqlite" && store != "postgres" {
            throw ValidationError("--store must be sqlite or postgres")
        }
    }

    /// The configuration as `serve` would read it with these flags (the file, the environment, the flags given
    /// here); its other fields are there for commands that use them (`rotate-key`'s grace).
    func configuration() async throws -> PushRelayConfiguration {
        var arguments: [String] = []
        if let configFile { arguments += [ConfigurationLoader.configFileFlag, configFile] }
        if let dataDir { arguments += ["--data-dir", dataDir] }
        if let store { arguments += ["--store", store] }
        if let postgresURLOption { arguments += ["--postgres-url", postgresURLOption] }
        do {
            return try await ConfigurationLoader.load(
                arguments: arguments, environment: ProcessInfo.processInfo.environment
            ).configuration
        } catch {
            throw ValidationError("invalid configuration: \(error.problems.map(\.description).joined(separator: "; "))")
        }
    }

    /// Runs `body` on the opened store and closes it, whether `body` returns or throws; a store error (an unknown
    /// project, a name taken) becomes a validation error (exit 64) with its message.
    func withStore<Result>(
        createIfMissing: Bool = false, queuePolicy: QueuePolicy = QueuePolicy(),
        configuration: PushRelayConfiguration? = nil, _ body: (any PushStore) async throws -> Result
    ) async throws -> Result {
        let store = try await self.open(
            createIfMissing: createIfMissing, queuePolicy: queuePolicy, configuration: configuration)
        do {
            let result = try await body(store)
            await store.close()
            return result
        } catch let error as StoreError {
            await store.close()
            throw Self.refusal(error.message)
        } catch {
            await store.close()
            throw error
        }
    }

    /// Runs the read of a command that only reads (the store opened with `readOnly`) and closes the store, whether
    /// `body` returns or throws. A store that cannot be read (it changed under a read of a closed store, PostgreSQL
    /// went away) stops the command as one that cannot be opened does: one line, 69 (65 when damaged).
    static func reading<Result>(
        _ store: any PushStore, _ body: (any PushStore) async throws -> Result
    ) async throws -> Result {
        do {
            let result = try await body(store)
            await store.close()
            return result
        } catch let error as StoreError where error.code == .unavailable || error.code == .corrupt {
            await store.close()
            throw error.exit("cannot read the store")
        } catch {
            await store.close()
            throw error
        }
    }

    /// What a command throws when the store refuses what it asked (a project that exists, or does not): one line,
    /// `pushrelay: <why>`, and exit status 64 (`EX_USAGE`: the command named something it cannot act on). Not the
    /// argument parser's usage text, which names no option that was wrong.
    static func refusal(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data("pushrelay: \(message)\n".utf8))
        return ExitCode(64)
    }

    /// Opens the store (close it when done). Only `createIfMissing` (`project create`, `store init`) creates a
    /// missing one: any other command on a missing or empty store exits 66, as `serve` does, instead of leaving an
    /// empty store behind for a daemon to serve (a wrong `--data-dir`, an unmounted disk). A store that cannot be
    /// opened otherwise exits as `serve` does too: one line, 65 when it is damaged, else 69 (``StoreError/exitStatus``).
    /// `configuration`: one the command has loaded already (``configuration()``), not read again. `readOnly`, for
    /// the commands that only read: a SQLite store is opened read-only (``SQLiteStore/Configuration/readOnly``), so
    /// that a backup mounted read-only, or a data directory this user may read but not write, can be listed.
    func open(
        createIfMissing: Bool = false, readOnly: Bool = false, queuePolicy: QueuePolicy = QueuePolicy(),
        configuration loaded: PushRelayConfiguration? = nil
    ) async throws -> any PushStore {
        var logger = Logger(label: "pushrelay.cli")
        logger.logLevel = .warning
        let configuration: PushRelayConfiguration
        if let loaded { configuration = loaded } else { configuration = try await self.configuration() }
        do {
            return try await RelayStore.open(
                RelayStore.Location(configuration), createIfMissing: createIfMissing, queuePolicy: queuePolicy,
                readOnly: readOnly, postgres: RelayStore.PostgresTuning(configuration),
                authRecheckInterval: configuration.authRecheckInterval, logger: logger)
        } catch let error as StoreError where error.code == .notFound {
            let directory = configuration.dataDirectory
            let hint = "create it with `pushrelay project create NAME --data-dir \(directory)`"
                + " or `pushrelay store init --data-dir \(directory)`"
            FileHandle.standardError.write(Data("pushrelay: \(error.message): \(hint)\n".utf8))
            throw ExitCode(66)
        } catch let error as StoreError {
            throw error.exit("cannot open the store")
        }
    }
}

extension StoreError {
    /// The exit status of a command stopped by this error, the same for `serve` and every CLI command (sysexits):
    /// 66 (`EX_NOINPUT`) for a missing or empty store, 65 (`EX_DATAERR`) for a damaged one, 73 (`EX_CANTCREAT`)
    /// for a target that already holds data (`store migrate` into a used database), 69 (`EX_UNAVAILABLE`) for any
    /// other (unreachable, refused, read-only).
    var exitStatus: Int32 {
        switch code {
        case .notFound: 66
        case .corrupt: 65
        case .alreadyExists: 73
        default: 69
        }
    }

    /// Writes `pushrelay: <context>: <message>` to standard error and returns the exit to throw. The message never
    /// holds a URL's password.
    func exit(_ context: String) -> ExitCode {
        FileHandle.standardError.write(Data("pushrelay: \(context): \(message)\n".utf8))
        return ExitCode(exitStatus)
    }
}
