import Foundation
import PushRelayCore
import TestSupport
import Testing
@testable import PushRelayStore

/// ``NewTopicMessage/restrictedPackageName``: a topic or condition message with `restricted_package_name` reaches
/// only the subscribers whose device app is that name, in a resumed expansion too, and a database of the schema
/// before the column opens with its unfinished expansions intact.
@Suite("Store: restricted topic messages")
struct TopicRestrictionTests {
    @Test("a restricted topic or condition message reaches only the subscribers of that app", arguments: StoreKind.allCases)
    func onlyTheMatchingApp(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory, configure: { $0.conditionCompiler = FakeConditionCompiler.compile }) { store in
                let fixture = try await makeFixture(store)  // app com.shop
                let other = try await store.registerDevice(project: fixture.project, app: "com.x", platform: "ANDROID")
                let tokens = [fixture.registration.device.token, other.device.token]
                _ = try await store.subscribe(tokens: tokens, to: "a", project: fixture.project)
                _ = try await store.subscribe(tokens: tokens, to: "b", project: fixture.project)
                let send = { (target: NewTopicMessage.Target, body: UInt8, app: String?) in
                    _ = try await store.enqueueTopicMessage(
                        NewTopicMessage(project: fixture.project, target: target, body: [body], restrictedPackageName: app))
                }
                try await send(.topic("a"), 1, "com.shop")
                try await send(.condition("'a' in topics && 'b' in topics"), 2, "com.shop")
                try await send(.topic("b"), 3, "com.x")
                try await send(.condition("'a' in topics || 'b' in topics"), 4, "com.x")
                try await send(.topic("a"), 5, "com.zzz")
                try await send(.condition("'a' in topics && 'b' in topics"), 6, "com.zzz")
                try await send(.topic("a"), 7, nil)
                try await send(.condition("'a' in topics && 'b' in topics"), 8, nil)
                try await waitForFanOut(store)
                let shop = try await store.pendingMessages(for: fixture.device, after: nil, limit: 10).map(\.body)
                let x = try await store.pendingMessages(for: other.device.id, after: nil, limit: 10).map(\.body)
                #expect(shop == [[1], [2], [7], [8]])
                #expect(x == [[3], [4], [7], [8]])
            }
        }
    }

    @Test("a restart in the middle of a restricted expansion keeps the restriction", arguments: StoreKind.allCases)
    func restrictionSurvivesRestart(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            let devices = try await withStore(kind, in: directory, configure: {
                $0.automaticFanOut = false
                $0.fanOutBatchSize = 2
            }) { store in
                let project = try await store.createProject(name: "shop").project.id
                var devices: [Device] = []
                for index in 0..<8 {
                    let app = index.isMultiple(of: 2) ? "com.shop" : "com.x"
                    devices.append(try await store.registerDevice(project: project, app: app, platform: "ANDROID").device)
                }
                _ = try await store.subscribe(tokens: devices.map(\.token), to: "all", project: project)
                _ = try await store.enqueueTopicMessage(
                    NewTopicMessage(project: project, target: .topic("all"), body: [1], restrictedPackageName: "com.shop"))
                #expect(try await store.expandOneFanOutBatch())
                #expect(try await store.queueStatistics().topicMessagesExpanding == 1)
                return devices
            }
            // Reopened, as after a kill: the rest of the expansion still skips the other app's devices.
            try await withStore(kind, in: directory) { store in
                try await waitForFanOut(store)
                for device in devices {
                    let bodies = try await store.pendingMessages(for: device.id, after: nil, limit: 10).map(\.body)
                    #expect(bodies == (device.app == "com.shop" ? [[1]] : []), "\(device.app) \(device.id)")
                }
            }
        }
    }

    @Test("a database of the schema before the column opens, and its unfinished expansion finishes unrestricted", arguments: StoreKind.allCases)
    func olderDatabaseIsMigrated(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            let devices = try await withStore(kind, in: directory, configure: { $0.automaticFanOut = false }) { store in
                let project = try await store.createProject(name: "shop").project.id
                let shop = try await store.registerDevice(project: project, app: "com.shop", platform: "ANDROID").device
                let x = try await store.registerDevice(project: project, app: "com.x", platform: "ANDROID").device
                _ = try await store.subscribe(tokens: [shop.token, x.token], to: "news", project: project)
                _ = try await store.enqueueTopicMessage(NewTopicMessage(project: project, target: .topic("news"), body: [1]))
                return [shop, x]
            }
            // Back to the schema without the column, the topic message still to expand.
            switch kind {
            case .sqlite:
                let connection = try SQLiteConnection(path: directory + "/pushrelay.sqlite", busyTimeout: .seconds(5))
                try connection.execute(
                    """
                    DROP TABLE device_group_members; DROP TABLE device_groups;
                    ALTER TABLE topic_messages DROP COLUMN restricted_package_name; PRAGMA user_version = 4;
                    """)
                connection.close()
            case .postgres:
                // Migration 6 (the exact topic snapshot) undone as well: rows without created_xid and a message
                // without its visible snapshot, as the migration finds them.
                let result = try await TestPostgres.shared.psql(
                    "DROP TABLE device_group_members; DROP TABLE device_groups; "
                        + "ALTER TABLE subscriptions DROP COLUMN created_xid; ALTER TABLE topic_messages DROP COLUMN visible; "
                        + "ALTER TABLE topic_messages DROP COLUMN restricted_package_name; "
                        + "DELETE FROM pushrelay_migrations WHERE version >= 5;",
                    database: databaseName(for: directory))
                #expect(result.status == 0, "\(result.stderr)")
            }
            try await withStore(kind, in: directory) { store in
                try await waitForFanOut(store)
                for device in devices {
                    #expect(try await store.pendingMessages(for: device.id, after: nil, limit: 10).map(\.body) == [[1]])
                }
                // And the migrated store takes restricted messages.
                _ = try await store.enqueueTopicMessage(
                    NewTopicMessage(
                        project: devices[0].project, target: .topic("news"), body: [2], restrictedPackageName: "com.x"))
                try await waitForFanOut(store)
                #expect(try await store.pendingMessages(for: devices[0].id, after: nil, limit: 10).map(\.body) == [[1]])
                #expect(try await store.pendingMessages(for: devices[1].id, after: nil, limit: 10).map(\.body) == [[1], [2]])
            }
        }
    }
}
