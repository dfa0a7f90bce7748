import Foundation
import Logging
import PushRelayCore
import Testing
import TestSupport
@testable import PushRelayStore

/// ``PostgresStore/importAll(from:progress:)``: what a SQLite store holds, PostgreSQL holds after the copy, with the
/// same ids and credentials, and the identity sequences and the message-id mark past the copied rows.
@Suite("Store: SQLite into PostgreSQL")
struct StoreImportTests {
    @Test("keys (rotated and current), devices, queues, subscriptions, device groups, service accounts and tokens arrive; new rows get new ids")
    func everythingArrives() async throws {
        try await withTemporaryDirectory { directory in
            let sqlite = try await openStore(.sqlite, in: directory) as! SQLiteStore
            let shop = try await sqlite.createProject(name: "shop")
            let rotated = try await sqlite.rotateServerKey(project: "shop", gracePeriod: .seconds(3600))
            let device = try await sqlite.registerDevice(project: shop.project.id, app: "a", platform: "IOS")
            let results = try await sqlite.enqueue([
                NewMessage(device: device.device.id, body: [1]), NewMessage(device: device.device.id, body: [2], collapseKey: "c"),
            ])
            _ = try await sqlite.subscribe(tokens: [device.device.token], to: "news", project: shop.project.id)
            let grouped = try await sqlite.changeDeviceGroup(
                .create(name: "appUser-Chris", tokens: [device.device.token]), project: shop.project.id)
            guard case .done(let notificationKey) = grouped else { Issue.record("not created: \(grouped)"); return }
            let key = try await sqlite.addServiceAccountKey(
                project: "shop", keyID: "k1", clientEmail: "a@shop", publicKeyPEM: "PEM")
            try await sqlite.issueAccessToken("access", key: key, expiresAt: Date().addingTimeInterval(600))
            let before = try await sqlite.pendingMessages(for: device.device.id, after: nil, limit: 10)

            let postgres = try await openStore(.postgres, in: directory) as! PostgresStore
            let report = try await postgres.importAll(from: sqlite)
            #expect(report.description.hasPrefix("projects 1, server_keys 2, devices 1, messages 2, topics 1, subscriptions 1"),
                    "\(report)")
            #expect(report.count(of: "service_account_keys") == 1 && report.count(of: "access_tokens") == 1)
            #expect(report.count(of: "device_groups") == 1 && report.count(of: "device_group_members") == 1, "\(report)")

            #expect(try await postgres.authenticateServerKey(shop.serverKey)?.name == "shop", "the rotated key, in grace")
            #expect(try await postgres.authenticateServerKey(rotated)?.name == "shop")
            #expect(try await postgres.authenticateClientKey(shop.clientKey, project: "shop") != nil)
            #expect(try await postgres.authenticateDevice(secret: device.secret) == device.device)
            #expect(try await postgres.authenticateAccessToken("access")?.name == "shop")
            #expect(try await postgres.pendingMessages(for: device.device.id, after: nil, limit: 10) == before)
            #expect(try await postgres.subscriptions(of: device.device.id).map(\.topic) == ["news"])
            #expect(try await postgres.deviceGroup(notificationKey: notificationKey)?.members == [device.device])
            #expect(try await postgres.deviceGroupKey(name: "appUser-Chris", project: shop.project.id) == notificationKey)

            // New rows: ids past the copied ones, message ids past the copied mark; the device count came along.
            let other = try await postgres.createProject(name: "other")
            #expect(other.project.id > shop.project.id)
            let second = try await postgres.registerDevice(project: shop.project.id, app: "a", platform: "IOS", deviceLimit: 2)
            #expect(second.device.id > device.device.id)
            await #expect(throws: StoreError.self) {
                try await postgres.registerDevice(project: shop.project.id, app: "a", platform: "IOS", deviceLimit: 2)
            }
            // A new group and member get ids past the copied ones (the identity sequences moved).
            #expect(try await postgres.changeDeviceGroup(
                .add(notificationKey: notificationKey, name: nil, tokens: [second.device.token]), project: shop.project.id)
                == .done(notificationKey: notificationKey))
            let another = try await postgres.changeDeviceGroup(
                .create(name: "another", tokens: [second.device.token]), project: shop.project.id)
            #expect(another != .nameTaken && another != .tooManyMembers, "\(another)")
            let next = try await postgres.enqueue([NewMessage(device: device.device.id, body: [3])])
            let copiedIDs = results.compactMap(\.messageID)
            #expect(try #require(next.first?.messageID) > copiedIDs.max()!)

            // A second copy into a database with projects is refused and changes nothing.
            let again = await #expect(throws: StoreError.self) { try await postgres.importAll(from: sqlite) }
            #expect(again?.code == .alreadyExists)
            await postgres.close()
            await sqlite.close()
        }
    }

    /// `pushrelay store migrate` opens the source without automatic fan-out and holds its write lock while it copies:
    /// a topic message whose expansion a stopped daemon left unfinished is copied as it is (not expanded into the
    /// source, where a device at the 100-message limit would have lost its queue to the overflow rule), and a
    /// writer that comes meanwhile waits, so the copy is one state of the store.
    @Test("the source is copied as it is: an unfinished topic expansion is not run on it, and nothing commits to it while it is read")
    func sourceIsLeftAsItWas() async throws {
        try await withTemporaryDirectory { directory in
            var configuration = SQLiteStore.Configuration(directory: directory)
            let daemon = try SQLiteStore(configuration: configuration, logger: Logger(label: "test"))
            let shop = try await daemon.createProject(name: "shop")
            let device = try await daemon.registerDevice(project: shop.project.id, app: "a", platform: "IOS")
            _ = try await daemon.subscribe(tokens: [device.device.token], to: "news", project: shop.project.id)
            _ = try await daemon.enqueue((0..<100).map { NewMessage(device: device.device.id, body: [UInt8($0)]) })
            await daemon.close()
            // What a daemon stopped mid-expansion leaves: a topic message not yet expanded to its subscriber.
            let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
            let raw = try SQLiteConnection(path: configuration.path, busyTimeout: .seconds(1))
            try raw.execute(
                """
                INSERT INTO topic_messages
                    (id, project_id, topic, snapshot, cursor, expires_at, created_at, body, restricted_package_name)
                VALUES ((SELECT max(id) + 1 FROM messages), \(shop.project.id.rawValue), 'news', 9000000000000000000, 0,
                        \(now + 3_600_000_000), \(now), x'7b7d', 'com.a')
                """)

            configuration.automaticFanOut = false
            let source = try SQLiteStore(configuration: configuration, logger: Logger(label: "test"))
            let postgres = try await openStore(.postgres, in: directory, options: StoreOptions(automaticFanOut: false))
                as! PostgresStore
            var intruder = SQLiteStore.Configuration(directory: directory)
            intruder.busyTimeout = .milliseconds(200)
            intruder.automaticFanOut = false
            let other = try SQLiteStore(configuration: intruder, logger: Logger(label: "test"))
            let report = try await source.withWritesHeld {
                // Another process's write cannot commit while the copy runs.
                await #expect(throws: StoreError.self) {
                    try await other.enqueue([NewMessage(device: device.device.id, body: [9])])
                }
                return try await postgres.importAll(from: source)
            }
            #expect(report.count(of: "messages") == 100 && report.count(of: "topic_messages") == 1, "\(report)")
            // The unfinished expansion keeps its restricted_package_name.
            let copied = try await TestPostgres.shared.psql(
                "SELECT restricted_package_name FROM topic_messages", database: databaseName(for: directory))
            #expect(copied.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "com.a", "\(copied.stderr)")
            // The source: still 100 messages and the one unfinished expansion.
            let pending = try await source.pendingMessages(for: device.device.id, after: nil, limit: 1000)
            #expect(pending.count == 100 && pending.allSatisfy { $0.kind == .message }, "\(pending.count)")
            let left = try SQLiteConnection(path: configuration.path, busyTimeout: .seconds(1))
            let count = try left.statement("SELECT count(*) FROM topic_messages")
            #expect(try count.step() && count.int64(0) == 1)
            try count.run()
            await other.close()
            await source.close()
            await postgres.close()
        }
    }

    /// A source opened read-only (a backup mounted read-only: `store migrate` cannot hold its writes) is copied when
    /// nothing writes it; when a process commits to it during the copy, the copy is refused and nothing arrives: a
    /// closed store (read as a fixed file) and one a daemon has open (read through its write-ahead log) alike.
    @Test("a read-only source: copied when unchanged; a write during the copy refuses it, nothing committed")
    func readOnlySource() async throws {
        try await withTemporaryDirectory { directory in
            let writable = try await openStore(.sqlite, in: directory) as! SQLiteStore
            let shop = try await writable.createProject(name: "shop")
            let device = try await writable.registerDevice(project: shop.project.id, app: "a", platform: "IOS")
            _ = try await writable.enqueue([NewMessage(device: device.device.id, body: [1])])

            var configuration = SQLiteStore.Configuration(directory: directory)
            configuration.readOnly = true
            configuration.automaticFanOut = false
            #expect(SQLiteStore.isWritable(configuration), "the test's own directory")
            let postgres = try await openStore(.postgres, in: directory, options: StoreOptions(automaticFanOut: false))
                as! PostgresStore
            let path = configuration.path
            /// A copy during which another connection commits to the source: refused saying `reason`, nothing copied.
            func refusedCopy(_ reason: String) async throws {
                let source = try SQLiteStore(configuration: configuration, logger: Logger(label: "test"))
                let refused = await #expect(throws: StoreError.self) {
                    try await postgres.importAll(from: source) { table, _ in
                        guard table == "projects" else { return }
                        let intruder = try? SQLiteConnection(path: path, busyTimeout: .seconds(5))
                        try? intruder?.execute("UPDATE meta SET value = value + 1 WHERE key = 'last_message_id'")
                        intruder?.close()
                    }
                }
                #expect(refused?.code == .unavailable)
                #expect(refused?.message.contains(reason) == true, "\(String(describing: refused))")
                let projects = try await TestPostgres.shared.psql(
                    "SELECT count(*) FROM projects", database: databaseName(for: directory))
                #expect(projects.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(projects)")
                await source.close()
            }
            // The store open in another store (a daemon): read through its -wal, checked at the end of the copy.
            try await refusedCopy("changed while it was copied")
            await writable.close()
            // Closed: read as a fixed file, whose reads notice the change.
            try await refusedCopy("changed while it was read")

            // Unchanged: everything arrives.
            let source = try SQLiteStore(configuration: configuration, logger: Logger(label: "test"))
            let report = try await postgres.importAll(from: source)
            #expect(report.count(of: "projects") == 1 && report.count(of: "messages") == 1, "\(report)")
            #expect(try await postgres.authenticateDevice(secret: device.secret) == device.device)
            await source.close()
            await postgres.close()
        }
    }
}
