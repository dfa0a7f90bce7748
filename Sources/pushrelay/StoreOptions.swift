import ArgumentParser
import Foundation
import Logging
import PushRelayCore
import PushRelayServer
import PushRelayStore

/// Where a CLI command finds the store, as `serve` does: `--data-dir` for SQLite, or `--store postgres` with
/// `--postgres-url` (defaults from `PUSHRELAY_DATA_DIR`, `PUSHRELAY_STORE`, `PUSHRELAY_POSTGRES_URL`). The store
/// is shared with running daemons, which see changes at once.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: "The daemon's data directory (holds pushrelay.sqlite).")
    var dataDir: String = ProcessInfo.processInfo.environment["PUSHRELAY_DATA_DIR"] ?? "/var/lib/pushrelay"

    @Option(name: .long, help: "The store engine: sqlite or postgres.")
    var store: String = ProcessInfo.processInfo.environment["PUSHRELAY_STORE"] ?? "sqlite"

    /// No default value in the declaration: ArgumentParser prints a default in `--help`, and this one holds the
    /// database password. The environment is read by ``postgresURL``.
    @Option(
        name: .customLong("postgres-url"),
        help: "The PostgreSQL URL with --store postgres (a secret: prefer PUSHRELAY_POSTGRES_URL)."
    )
    var postgresURLOption: String?

    /// `--postgres-url`, else `PUSHRELAY_POSTGRES_URL`.
    var postgresURL: String? {
        self.postgresURLOption ?? ProcessInfo.processInfo.environment["PUSHRELAY_POSTGRES_URL"]
    }

    func validate() throws {
        guard self.store == "sqlite" || self.store == "postgres" else {
            throw ValidationError("--store must be sqlite or postgres")
        }
        if self.store == "postgres" {
            guard let url = self.postgresURL else { throw ValidationError("--store postgres needs --postgres-url") }
            do {
                _ = try PostgresURL(url)
            } catch {
                throw ValidationError("--postgres-url: \(error.message)")
            }
        }
    }

    /// Where the options point.
    var location: RelayStore.Location {
        if self.store == "postgres", let url = self.postgresURL { return .postgres(url: url) }
        return .sqlite(directory: self.dataDir)
    }

    /// Runs `body` on the opened store and closes it, whether `body` returns or throws; a store error (an unknown
    /// project, a name taken) becomes a validation error (exit 64) with its message.
    func withStore<Result>(
        createIfMissing: Bool = false, queuePolicy: QueuePolicy = QueuePolicy(),
        _ body: (any PushStore) async throws -> Result
    ) async throws -> Result {
        let store = try await self.open(createIfMissing: createIfMissing, queuePolicy: queuePolicy)
        do {
            let result = try await body(store)
            await store.close()
            return result
        } catch let error as StoreError {
            await store.close()
            throw ValidationError(error.message)
        } catch {
            await store.close()
            throw error
        }
    }

    /// Opens the store (close it when done). Only `createIfMissing` (`project create`, `store init`) creates a
    /// missing one: any other command on a missing or empty store exits 66, as `serve` does, instead of leaving an
    /// empty store behind for a daemon to serve (a wrong `--data-dir`, an unmounted disk). Another store error
    /// becomes a validation error (exit 64) with its message.
    func open(createIfMissing: Bool = false, queuePolicy: QueuePolicy = QueuePolicy()) async throws -> any PushStore {
        var logger = Logger(label: "pushrelay.cli")
        logger.logLevel = .warning
        do {
            return try await RelayStore.open(
                self.location, createIfMissing: createIfMissing, queuePolicy: queuePolicy, logger: logger)
        } catch let error as StoreError where error.code == .notFound {
            let hint = "create it with `pushrelay project create NAME --data-dir \(self.dataDir)`"
                + " or `pushrelay store init --data-dir \(self.dataDir)`"
            FileHandle.standardError.write(Data("pushrelay: \(error.message): \(hint)\n".utf8))
            throw ExitCode(66)
        } catch let error as StoreError {
            throw ValidationError("cannot open the store: \(error.message)")
        }
    }
}
