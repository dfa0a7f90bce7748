import Foundation
import PushRelayCore
import TestSupport
import Testing
@testable import PushRelayStore

/// The topic-send snapshot on PostgreSQL: `subscriptions.id` is taken at insert, not at commit, so the largest id a
/// send sees does not bound the subscriptions committed before it. A subscription inserted on another node before
/// the send but committed after it must not be expanded.
@Suite("Store: PostgreSQL topic snapshot")
struct PostgresTopicSnapshotTests {
    @Test("a subscription inserted before a send but committed after it does not get the message")
    func subscriptionCommittedAfterTheSend() async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(.postgres, in: directory, configure: { $0.automaticFanOut = false }) { store in
                let project = try await store.createProject(name: "shop").project.id
                var devices: [Device] = []
                for _ in 0..<3 {
                    devices.append(try await store.registerDevice(project: project, app: "a", platform: "IOS").device)
                }
                let (early, late, later) = (devices[0], devices[1], devices[2])
                _ = try await store.subscribe(tokens: [early.token], to: "news", project: project)

                // Another node's subscription, inserted (its id taken) and not yet committed.
                let postgres = try await TestPostgres.shared
                let database = databaseName(for: directory)
                let held = try postgres.session(database: database, name: "held_subscribe")
                try held.send(
                    """
                    BEGIN;
                    INSERT INTO subscriptions (topic_id, device_id, added_at)
                        VALUES ((SELECT id FROM topics WHERE name = 'news'), \(late.id.rawValue), 0);
                    """)
                var waiting = true
                for _ in 0..<6_000 where waiting {
                    let state = try await postgres.psql(
                        """
                        SELECT count(*) FROM pg_stat_activity
                        WHERE application_name = 'held_subscribe' AND state = 'idle in transaction'
                        """, database: database)
                    waiting = state.stdout.trimmingCharacters(in: .whitespacesAndNewlines) != "1"
                    if waiting { try await Task.sleep(for: .milliseconds(10)) }
                }
                #expect(!waiting, "the held subscription never started")
                // A subscription to another topic committed meanwhile, with a larger id: the send's largest visible
                // id passes the held one's. (Another topic: a subscription to `news` would wait for the held one's
                // lock on the topic row.)
                _ = try await store.subscribe(tokens: [later.token], to: "sport", project: project)
                _ = try await store.enqueueTopicMessage(NewTopicMessage(project: project, target: .topic("news"), body: [1]))
                try held.send("COMMIT;")
                #expect(await held.finish() == 0)
                let ids = try await postgres.psql(
                    "SELECT string_agg(device_id::text, ',' ORDER BY id) FROM subscriptions", database: database)
                #expect(
                    ids.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                        == "\(early.id.rawValue),\(late.id.rawValue),\(later.id.rawValue)",
                    "the held subscription has the middle id")

                while try await store.expandOneFanOutBatch() {}
                #expect(try await store.pendingMessages(for: early.id, after: nil, limit: 10).map(\.body) == [[1]])
                #expect(try await store.pendingMessages(for: late.id, after: nil, limit: 10).isEmpty)
                #expect(try await store.pendingMessages(for: later.id, after: nil, limit: 10).isEmpty)
                // The next send reaches it.
                _ = try await store.enqueueTopicMessage(NewTopicMessage(project: project, target: .topic("news"), body: [2]))
                while try await store.expandOneFanOutBatch() {}
                #expect(try await store.pendingMessages(for: late.id, after: nil, limit: 10).map(\.body) == [[2]])
            }
        }
    }
}
