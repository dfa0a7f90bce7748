import ArgumentParser
import Foundation
import PushRelayStore

/// `pushrelay store …`: the store itself.
struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Manage the store itself.",
        subcommands: [Init.self]
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
            let file = store.store == "sqlite"
                ? (store.dataDir.hasSuffix("/") ? store.dataDir : store.dataDir + "/") + "pushrelay.sqlite" : nil
            let existed = file.map { ((try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int) ?? 0) > 0 }
            if store.store == "sqlite" {
                try FileManager.default.createDirectory(atPath: store.dataDir, withIntermediateDirectories: true)
            }
            let opened = try await store.open()
            await opened.close()
            switch (file, existed) {
            case (let file?, false?): print("created \(file)")
            case (let file?, _): print("\(file) exists; left as it is")
            default: print("the PostgreSQL schema is in place")
            }
        }
    }
}
