import Foundation
import TestSupport
import Testing

/// `pushrelay store migrate --from-data-dir DIR --to postgres://…`: a single node's SQLite store moves into PostgreSQL
/// and every credential goes on working there.
@Suite("Store migration: SQLite to PostgreSQL", .serialized, .tags(.endToEnd), .hangGuard)
struct StoreMigrationTests {
    @Test("keys, device tokens and secrets, pending messages, subscriptions and device groups work on the nodes after the copy; a second copy is refused")
    func sqliteStoreMovesToPostgres() async throws {
        // One node on SQLite: a device with two messages it has not received, subscribed to a topic.
        let single = try Daemon()
        try await single.start()
        let keys = try await single.createProject()
        let device = try await single.registerDevice(keys)
        let subscribed = try await run("curl", [
            "-sS", "-X", "POST", "\(single.baseURL)/iid/v1:batchAdd", "-H", "Authorization: key=\(keys.serverKey)",
            "-H", "Content-Type: application/json",
            "--data-binary", #"{"to": "/topics/news", "registration_tokens": ["\#(device.token)"]}"#,
        ])
        #expect(subscribed.stdout.contains("results"), "\(subscribed.stdout)")
        // …and a member of a device group.
        let grouped = try await run("curl", [
            "-sS", "-X", "POST", "\(single.baseURL)/fcm/notification", "-H", "Authorization: key=\(keys.serverKey)",
            "-H", "project_id: \(keys.senderID)", "-H", "Content-Type: application/json", "--data-binary",
            #"{"operation": "create", "notification_key_name": "u1", "registration_ids": ["\#(device.token)"]}"#,
        ])
        let notificationKey = try #require(try jsonObject(grouped.stdout)["notification_key"] as? String, "\(grouped.stdout)")
        var pending: [String] = []
        for n in 0..<2 {
            let answer = try await single.send(#"{"to": "\#(device.token)", "data": {"n": "\#(n)"}}"#, serverKey: keys.serverKey)
            pending.append(try messageID(ofSendResponse: answer.body))
        }
        #expect(try await single.terminate() == 0)

        let url = try await TestPostgres.shared.freshDatabase("migrated")
        let copied = try await run(Daemon.binary, ["store", "migrate", "--from-data-dir", single.dataDir.path],
                                   environment: ["PUSHRELAY_POSTGRES_URL": url])
        #expect(copied.status == 0, "\(copied.stderr)")
        #expect(copied.stdout.contains("projects 1, server_keys 1, devices 1, messages 2, topics 1, subscriptions 1"),
                "\(copied.stdout)")
        #expect(copied.stdout.contains("device_groups 1, device_group_members 1"), "\(copied.stdout)")

        // Two nodes on the copy.
        let nodes = try await MultiNodeTests.nodes(2, url: url)
        // The device's secret opens its stream on node B and the messages it had not received arrive, ids kept.
        let stream = try nodes[1].openStream(secret: device.secret)
        defer { stream.stop() }
        try await stream.waitFor(timeout: .seconds(30), "the pending messages") { text in
            Set(pending).isSubset(of: Set(parseEvents(text).compactMap(\.id)))
        }
        // The server key sends on node A to the token and to the topic; the client key registers.
        let direct = try messageID(ofSendResponse: try await nodes[0].send(
            #"{"to": "\#(device.token)", "data": {"n": "after"}}"#, serverKey: keys.serverKey).body)
        let topicAnswer = try await nodes[0].send(#"{"to": "/topics/news", "data": {"n": "topic"}}"#, serverKey: keys.serverKey)
        let topic = "\(try jsonObject(topicAnswer.body)["message_id"] ?? "")"
        // The group's key, copied with its member, sends on node A.
        let group = try await nodes[0].send(#"{"to": "\#(notificationKey)", "data": {"n": "group"}}"#, serverKey: keys.serverKey)
        #expect(group.body == #"{"success":1,"failure":0}"#, "\(group.body)")
        // The topic message reaches the subscription copied with the device: five messages in all.
        try await stream.waitFor(timeout: .seconds(30), "the new messages") { text in
            let ids = parseEvents(text).compactMap(\.id)
            return ids.contains(direct) && ids.count >= 5
        }
        #expect(!topic.isEmpty)
        let another = try await nodes[0].registerDevice(keys)
        #expect(!another.token.isEmpty)
        let ids = parseEvents(stream.text).compactMap(\.id)
        #expect(ids.filter { pending.contains($0) }.count == 2, "each pending message once: \(ids)")
        #expect(Set(ids).count == ids.count, "no message twice: \(ids)")
        for node in nodes { _ = try await node.terminate() }

        // Into a database that holds projects: refused, nothing copied.
        let again = try await run(Daemon.binary, ["store", "migrate", "--from-data-dir", single.dataDir.path, "--to", url])
        #expect(again.status == 73 && again.stderr.contains("already holds projects"), "\(again.status) \(again.stderr)")
        // From a directory without a store: refused, nothing created.
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("no-store-\(UUID().uuidString)").path
        let missing = try await run(Daemon.binary, ["store", "migrate", "--from-data-dir", empty, "--to", url])
        #expect(missing.status == 66 && missing.stderr.contains("cannot open the SQLite store"), "\(missing.status) \(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: empty + "/pushrelay.sqlite"))

        // From a read-only mount of the store (a backup): copied, read-only (it was refused: "is not writable").
        let fromBackup = try await TestPostgres.shared.freshDatabase("frombackup")
        let onReadOnlyMount = #"set -e; dir="$0"; mount --bind "$dir" "$dir"; mount -o remount,bind,ro "$dir"; exec "$@""#
        let backupCopy = try await run("unshare", [
            "-m", "--propagation", "private", "sh", "-c", onReadOnlyMount, single.dataDir.path,
            Daemon.binary, "store", "migrate", "--from-data-dir", single.dataDir.path,
        ], environment: ["PUSHRELAY_POSTGRES_URL": fromBackup])
        #expect(backupCopy.status == 0, "\(backupCopy.status) \(backupCopy.stderr)")
        #expect(backupCopy.stdout.contains("projects 1, server_keys 1, devices 1, messages 2"), "\(backupCopy.stdout)")
    }
}
