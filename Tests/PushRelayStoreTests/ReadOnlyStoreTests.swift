import Foundation
import Testing
@testable import PushRelayStore

/// ``SQLiteStore/Configuration/readOnly``: a store opened only to be read (the CLI's listings) writes nothing, not
/// even a `-wal` or `-shm` beside a closed store, and never reads a file that changed under it as if it had not.
@Suite("Store: SQLite opened read-only")
struct ReadOnlyStoreTests {
    static func readOnly(_ directory: String) throws -> SQLiteStore {
        var configuration = SQLiteStore.Configuration(directory: directory)
        configuration.readOnly = true
        return try SQLiteStore(configuration: configuration)
    }

    @Test("a closed store opened read-only: read; writes refused at once; no file created; a missing store not made")
    func readsAndRefusesWrites() async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(.sqlite, in: directory) { store in _ = try await store.createProject(name: "shop") }
            let store = try Self.readOnly(directory)
            #expect(try await store.projects().map(\.name) == ["shop"])
            let refused = await #expect(throws: StoreError.self) { try await store.createProject(name: "news") }
            #expect(refused?.code == .unavailable && refused?.message.contains("read-only") == true, "\(String(describing: refused))")
            await #expect(throws: StoreError.self) { try await store.probeCommit() }
            await store.close()
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["pushrelay.sqlite"])

            let missing = directory + "/missing"
            try FileManager.default.createDirectory(atPath: missing, withIntermediateDirectories: false)
            #expect(throws: StoreError.notFound("no store at \(missing)/pushrelay.sqlite")) { try Self.readOnly(missing) }
            #expect(try FileManager.default.contentsOfDirectory(atPath: missing).isEmpty)
        }
    }

    @Test("a store another connection has open is read through its write-ahead log")
    func readsTheWriteAheadLog() async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(.sqlite, in: directory) { writer in
                _ = try await writer.createProject(name: "shop")
                let store = try Self.readOnly(directory)
                _ = try await writer.createProject(name: "news")
                #expect(try await store.projects().map(\.name) == ["news", "shop"])
                await store.close()
            }
        }
    }

    @Test("a closed store read as unchanging that a writer opens and checkpoints meanwhile: the read is refused")
    func changedUnderTheRead() async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(.sqlite, in: directory) { store in _ = try await store.createProject(name: "shop") }
            let store = try Self.readOnly(directory)
            #expect(try await store.projects().map(\.name) == ["shop"])
            // The writer closing last checkpoints its write-ahead log into the database file.
            try await withStore(.sqlite, in: directory) { writer in _ = try await writer.createProject(name: "news") }
            let changed = await #expect(throws: StoreError.self) { try await store.projects() }
            #expect(changed?.code == .unavailable && changed?.message.contains("changed while it was read") == true)
            await store.close()
            let again = try Self.readOnly(directory)
            #expect(try await again.projects().map(\.name) == ["news", "shop"])
            await again.close()
        }
    }

    @Test("file URIs keep every byte of the path")
    func fileURI() {
        #expect(SQLiteConnection.fileURI("/var/lib/pushrelay/pushrelay.sqlite") == "file:///var/lib/pushrelay/pushrelay.sqlite")
        #expect(SQLiteConnection.fileURI("/a b/c?d#e%f/ç") == "file:///a%20b/c%3Fd%23e%25f/%C3%A7")
        #expect(SQLiteConnection.fileURI("relative/x.sqlite") == "file:relative/x.sqlite")
    }
}
