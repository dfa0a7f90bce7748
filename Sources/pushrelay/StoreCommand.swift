import ArgumentParser
import Foundation
import Logging
import PushRelayServer
import PushRelayStore

/// `pushrelay store …`: the store itself.
struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Manage the store itself.",
        subcommands: [Init.self, Migrate.self]
    )

    /// `pushrelay store init`: creates an empty store where none exists (what `serve --init` does at start).
    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an empty store (SQLite: DATA_DIR/pushrelay.sqlite; PostgreSQL: the schema).",
            discussion: """
                `serve` refuses to start on a missing or empty SQLite store, so that an unmounted data disk or a wrong \
                data_dir cannot make it serve an empty one. Run this once on a new installation (the Debian package \
                does on its first install), or create the first project, which creates the store too. An existing \
                store is opened, migrated to this version's schema and left as it is.
                """
        )

        @OptionGroup var store: StoreOptions

        func run() async throws {
            let configuration = try await store.configuration()
            let directory = configuration.dataDirectory
            let file = configuration.store == .sqlite
                ? (directory.hasSuffix("/") ? directory : directory + "/") + "pushrelay.sqlite" : nil
            let existed = file.map { ((try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int) ?? 0) > 0 }
            let opened = try await store.open(createIfMissing: true, configuration: configuration)
            await opened.close()
            switch (file, existed) {
            case (let file?, false?): print("created \(file)")
            case (let file?, _): print("\(file) exists; left as it is")
            default: print("the PostgreSQL schema is in place")
            }
        }
    }

    /// `pushrelay store migrate --from-data-dir DIR --to postgres://…`: a single node's SQLite store into PostgreSQL.
    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy a SQLite store into an empty PostgreSQL database (moving from one node to several).",
            discussion: """
                Copies projects with their key hashes, devices with their token and secret hashes, pending messages, \
                topics and subscriptions, unfinished topic expansions, device groups, service-account keys and access \
                tokens, in one transaction: everything arrives or nothing does. Ids are kept, so every server key, \
                client key, device token, device secret, notification key and service-account file goes on \
                working. Stop the daemon that uses the SQLite store first; then start the nodes with --store postgres \
                and the same URL. A store this user may not write (a backup mounted read-only) is read read-only; \
                the copy is then refused if it changes meanwhile. The PostgreSQL database must hold no project yet. The URL is a secret: prefer PUSHRELAY_POSTGRES_URL to --to.
                """
        )

        @Option(name: .customLong("from-data-dir"), help: "The SQLite store's data directory (holds pushrelay.sqlite).")
        var fromDataDir: String

        /// Read through ``to``; no default in the declaration, which `--help` would print with its password.
        @Option(name: .customLong("to"), help: "The PostgreSQL URL to copy into (default: $PUSHRELAY_POSTGRES_URL).")
        var toOption: String?

        /// `--to`, else `PUSHRELAY_POSTGRES_URL`.
        var to: String? { self.toOption ?? ProcessInfo.processInfo.environment["PUSHRELAY_POSTGRES_URL"] }

        func validate() throws {
            guard let to else { throw ValidationError("give --to postgres://… (or PUSHRELAY_POSTGRES_URL)") }
            do {
                _ = try PostgresURL(to)
            } catch {
                throw ValidationError("--to: \(error.message)")
            }
        }

        func run() async throws {
            var logger = Logger(label: "pushrelay.cli")
            logger.logLevel = .warning
            // createIfMissing false: a wrong directory is an error, not an empty store copied. Unfinished topic
            // expansions are copied as they are (the nodes resume them), not run here: the source stays as it was.
            var sqlite = SQLiteStore.Configuration.relay(directory: fromDataDir)
            sqlite.createIfMissing = false
            sqlite.automaticFanOut = false
            // A store this user may not write (a backup mounted read-only, another user's directory) is read
            // read-only: its writes cannot be held, so the copy is refused, nothing committed, if it changes meanwhile.
            // A writable one is opened as the daemon opens it (an older schema migrated first) and held.
            let writable = FileManager.default.fileExists(atPath: sqlite.path) ? SQLiteStore.isWritable(sqlite) : true
            sqlite.readOnly = !writable
            let source: SQLiteStore
            do {
                source = try SQLiteStore(configuration: sqlite, logger: logger)
            } catch let error as StoreError {
                throw error.exit("cannot open the SQLite store")
            }
            let target: PostgresStore
            do {
                var postgres = PostgresStore.Configuration(url: try PostgresURL(to ?? ""))
                postgres.conditionCompiler = SQLiteStore.Configuration.relayConditionCompiler
                target = try await PostgresStore.open(configuration: postgres, logger: logger)
            } catch let error as StoreError {
                await source.close()
                throw error.exit("cannot open the PostgreSQL store")
            }
            let report: StoreMigrationReport
            do {
                // Nothing commits to the source while it is read, table after table: the copy is one state of it.
                let progress: @Sendable (String, Int) -> Void = { table, copied in
                    if copied % 10_000 == 0 { FileHandle.standardError.write(Data("  \(table): \(copied)\n".utf8)) }
                }
                if writable {
                    report = try await source.withWritesHeld { try await target.importAll(from: source, progress: progress) }
                } else {
                    report = try await target.importAll(from: source, progress: progress)
                }
            } catch let error as StoreError {
                await target.close()
                await source.close()
                throw error.exit("nothing was copied")
            }
            await target.close()
            await source.close()
            print("copied \(report)")
            print("start every node with --store postgres and this URL; the SQLite store is left as it was")
        }
    }
}
