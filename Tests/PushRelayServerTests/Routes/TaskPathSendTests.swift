import Foundation
import HTTPTypes
import PushRelayStore
import Testing
@testable import PushRelayServer

/// A send whose credential memory cannot vouch for (here: the authentication epoch is always due for a check) is
/// answered through the routes' task path — the credential read from the store, then the same event-loop send — and
/// answers as the event-loop path does, for every kind of send of both APIs.
@Suite("Routes: sends through the task path")
struct TaskPathSendTests {
    @Test("tokens, a topic, a condition and a device group, legacy and v1, with every credential read from the store")
    func everyKind() async throws {
        let relay = try RelayHarness(configure: { $0.authRecheckInterval = .zero })
        let project = try await relay.createProject()
        let devices = try await relay.registerDevices(project, count: 2)
        #expect(relay.store.cachedProject(serverKey: project.serverKey) == nil, "memory vouches for nothing")
        let created = try await relay.request(
            .post, "/fcm/notification",
            headers: [
                .authorization: "key=\(project.serverKey)", HTTPField.Name("project_id")!: String(project.project.senderID),
                .contentType: "application/json",
            ],
            body: #"{"operation": "create", "notification_key_name": "pair", "registration_ids": ["\#(devices[0].token)", "\#(devices[1].token)"]}"#)
        let key = try #require(try created.json()["notification_key"] as? String, "\(created.text)")

        let legacy = try await relay.send(#"{"to": "\#(devices[0].token)", "data": {"n": "1"}}"#, key: project.serverKey)
        #expect(legacy.status == 200 && legacy.text.contains(#""success":1"#), "\(legacy.text)")
        let topic = try await relay.send(#"{"to": "/topics/news", "data": {"n": "2"}}"#, key: project.serverKey)
        #expect(topic.status == 200 && topic.text.contains(#""message_id":"#), "\(topic.text)")
        let condition = try await relay.send(#"{"condition": "!('news' in topics)", "data": {"n": "3"}}"#, key: project.serverKey)
        #expect(condition.status == 400, "\(condition.text)")
        let group = try await relay.send(#"{"to": "\#(key)", "data": {"n": "4"}}"#, key: project.serverKey)
        #expect(group.status == 200 && group.text.contains(#""success":2"#), "\(group.text)")

        try await relay.issueAccessToken("task-path-token", for: project, keyID: "task-path")
        let v1 = try await relay.request(
            .post, "/v1/projects/\(project.project.name)/messages:send",
            headers: [.authorization: "Bearer task-path-token", .contentType: "application/json"],
            body: #"{"message": {"token": "\#(devices[1].token)", "data": {"n": "5"}}}"#)
        #expect(v1.status == 200 && v1.text.contains(#""name":"projects/"#), "\(v1.text)")
        let found = try #require(try await relay.store.resolveTokens([devices[1].token]).first ?? nil)
        #expect(try await relay.store.pendingMessages(for: found.id, after: nil, limit: 10).count == 2)
        await relay.close()
    }
}
