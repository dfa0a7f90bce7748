import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import PushRelayStore
import Testing

@testable import PushRelayServer

/// Message-rate quotas (`device_message_rate`, `topic_message_rate`) in process: past a device's rate its recipient
/// answers `DeviceMessageRateExceeded` and nothing is stored for it; past a topic's rate the send answers
/// `TopicsMessageRateExceeded`; HTTP v1 answers both as `429 QUOTA_EXCEEDED`; a dry run counts against nothing.
@Suite("Routes: message-rate quotas")
struct QuotaRouteTests {
    private static func relay(devicePerMinute: Int = 3, topicPerMinute: Int = 2, projectPerMinute: Int = 0) throws -> RelayHarness {
        var options = RelayApplication.Options()
        options.deviceMessageRate = devicePerMinute
        options.topicMessageRate = topicPerMinute
        options.projectMessageRate = projectPerMinute
        return try RelayHarness(options: options)
    }

    @Test("a device past its rate answers DeviceMessageRateExceeded, stores nothing, and costs no other device")
    func deviceRate() async throws {
        let relay = try Self.relay()
        let project = try await relay.createProject()
        let devices = try await relay.registerDevices(project, count: 2)
        for n in 1...3 {
            let id = try await relay.messageID(#"{"to": "\#(devices[0].token)", "data": {"n": "\#(n)"}}"#, key: project.serverKey)
            #expect(!id.isEmpty)
        }
        // A dry run is validated, not sent: it is not counted and not refused.
        let dry = try await relay.results(
            #"{"to": "\#(devices[0].token)", "dry_run": true, "data": {"n": "dry"}}"#, key: project.serverKey)
        #expect(dry.first?["message_id"] as? String == "fake_message_id", "\(dry)")
        let results = try await relay.results(
            #"{"registration_ids": ["\#(devices[0].token)", "\#(devices[1].token)"], "data": {"n": "4"}}"#,
            key: project.serverKey)
        #expect(results[0]["error"] as? String == "DeviceMessageRateExceeded", "\(results)")
        #expect(results[1]["message_id"] is String, "the other device has its own rate: \(results)")

        let device = try #require(try await relay.store.resolveTokens([devices[0].token]).first ?? nil)
        let stored = try await relay.store.pendingMessages(for: device.id, after: nil, limit: 100)
        #expect(stored.count == 3, "only the three admitted messages are queued: \(stored.count)")
        await relay.close()
    }

    @Test("a topic past its rate answers TopicsMessageRateExceeded; other topics and conditions have their own")
    func topicRate() async throws {
        let relay = try Self.relay()
        let project = try await relay.createProject()
        for _ in 1...2 {
            let answer = try await relay.send(#"{"to": "/topics/sale", "data": {"k": "v"}}"#, key: project.serverKey)
            #expect(try answer.json()["message_id"] != nil, "\(answer.text)")
        }
        let refused = try await relay.send(#"{"to": "/topics/sale", "data": {"k": "v"}}"#, key: project.serverKey)
        #expect(refused.status == 200)
        #expect(try refused.json()["error"] as? String == "TopicsMessageRateExceeded", "\(refused.text)")
        let other = try await relay.send(#"{"to": "/topics/news", "data": {"k": "v"}}"#, key: project.serverKey)
        #expect(try other.json()["message_id"] != nil, "\(other.text)")
        let condition = try await relay.send(
            #"{"condition": "'sale' in topics", "data": {"k": "v"}}"#, key: project.serverKey)
        #expect(try condition.json()["message_id"] != nil, "\(condition.text)")
        await relay.close()
    }

    @Test("HTTP v1 answers a device past its rate with 429 RESOURCE_EXHAUSTED and FcmError QUOTA_EXCEEDED")
    func v1QuotaExceeded() async throws {
        let relay = try Self.relay(devicePerMinute: 1)
        let project = try await relay.createProject()
        let device = try await relay.registerDevice(project)
        try await relay.issueAccessToken("quota-test-token", for: project, keyID: "quota-test")
        let headers: HTTPFields = [.authorization: "Bearer quota-test-token", .contentType: "application/json"]
        let path = "/v1/projects/\(project.project.name)/messages:send"
        let body = #"{"message": {"token": "\#(device.token)", "data": {"k": "v"}}}"#
        let first = try await relay.request(.post, path, headers: headers, body: body)
        #expect(first.status == 200, "\(first.text)")
        let second = try await relay.request(.post, path, headers: headers, body: body)
        #expect(second.status == 429, "\(second.text)")
        // One message a minute: the device has room again within 60 s (not the node's Unavailable default, 10 s).
        #expect(second.headers[.retryAfter] == "60", "a quota answer says when to retry: \(second.headers)")
        let error = try #require(try second.json()["error"] as? [String: Any], "\(second.text)")
        #expect(error["status"] as? String == "RESOURCE_EXHAUSTED", "\(second.text)")
        #expect(second.text.contains(#""errorCode":"QUOTA_EXCEEDED""#) || second.text.contains(#""errorCode": "QUOTA_EXCEEDED""#),
                "\(second.text)")
        await relay.close()
    }

    @Test("a project past project_message_rate: the whole send answers 429 QuotaExceeded with Retry-After, nothing stored; v1 429 QUOTA_EXCEEDED")
    func projectRate() async throws {
        let relay = try Self.relay(devicePerMinute: 0, topicPerMinute: 0, projectPerMinute: 4)
        let project = try await relay.createProject()
        let other = try await relay.createProject("other")
        let devices = try await relay.registerDevices(project, count: 3)
        let tokens = devices.map { "\"\($0.token)\"" }.joined(separator: ", ")
        // Three recipients count three; a dry run counts nothing.
        let first = try await relay.results(#"{"registration_ids": [\#(tokens)], "data": {"n": "1"}}"#, key: project.serverKey)
        #expect(first.allSatisfy { $0["message_id"] is String }, "\(first)")
        let dry = try await relay.results(#"{"registration_ids": [\#(tokens)], "dry_run": true}"#, key: project.serverKey)
        #expect(dry.count == 3)
        // One left: a send to three is refused whole.
        let refused = try await relay.send(#"{"registration_ids": [\#(tokens)], "data": {"n": "2"}}"#, key: project.serverKey)
        #expect(refused.status == 429, "\(refused.text)")
        #expect(refused.text.hasPrefix("QuotaExceeded"), "\(refused.text)")
        let retryAfter = try #require(refused.headers[.retryAfter].flatMap { Int($0) })
        #expect((16...30).contains(retryAfter), "two more of three at 4 per minute, one every 15 s: \(retryAfter)")
        for device in devices {
            let stored = try #require(try await relay.store.resolveTokens([device.token]).first ?? nil)
            #expect(try await relay.store.pendingMessages(for: stored.id, after: nil, limit: 10).count == 1)
        }
        // The last one fits a topic send; then the project is out, on HTTP v1 too; another project is not.
        let topic = try await relay.send(#"{"to": "/topics/news", "data": {"k": "v"}}"#, key: project.serverKey)
        #expect(try topic.json()["message_id"] != nil, "\(topic.text)")
        try await relay.issueAccessToken("project-quota-token", for: project, keyID: "project-quota")
        let v1 = try await relay.request(
            .post, "/v1/projects/\(project.project.name)/messages:send",
            headers: [.authorization: "Bearer project-quota-token", .contentType: "application/json"],
            body: #"{"message": {"token": "\#(devices[0].token)", "data": {"k": "v"}}}"#)
        #expect(v1.status == 429 && v1.headers[.retryAfter] != nil, "\(v1.text)")
        #expect(v1.text.contains("QUOTA_EXCEEDED"), "\(v1.text)")
        let otherDevice = try await relay.registerDevice(other)
        let elsewhere = try await relay.messageID(#"{"to": "\#(otherDevice.token)", "data": {"k": "v"}}"#, key: other.serverKey)
        #expect(!elsewhere.isEmpty)
        await relay.close()
    }

    @Test("project_message_rate counts a send's distinct well-formed tokens; a send above the burst is told to wait for a full bucket")
    func projectRateCountsRecipientsThatGetACopy() async throws {
        let relay = try Self.relay(devicePerMinute: 0, topicPerMinute: 0, projectPerMinute: 4)
        let project = try await relay.createProject()
        let devices = try await relay.registerDevices(project, count: 5)
        // Six malformed tokens store nothing and count nothing, twice (a count of 6 would never fit a burst of 4).
        for _ in 1...2 {
            let malformed = try await relay.results(#"{"registration_ids": ["a", "a", "a", "a", "a", "a"]}"#, key: project.serverKey)
            #expect(malformed.count == 6 && malformed.allSatisfy { $0["error"] as? String == "InvalidRegistration" }, "\(malformed)")
        }
        // Three devices named twice each are three messages.
        let three = devices[0..<3].map { "\"\($0.token)\"" }
        let repeated = try await relay.results(
            #"{"registration_ids": [\#((three + three).joined(separator: ", "))], "data": {"n": "1"}}"#, key: project.serverKey)
        #expect(repeated.count == 6 && repeated.allSatisfy { $0["message_id"] is String }, "\(repeated)")
        // One left; five recipients are more than the whole burst: the wait is until the bucket is full (3 × 15 s),
        // not until it holds one more (15 s), after which the same send would be refused again.
        let five = devices.map { "\"\($0.token)\"" }.joined(separator: ", ")
        let refused = try await relay.send(#"{"registration_ids": [\#(five)], "data": {"n": "2"}}"#, key: project.serverKey)
        #expect(refused.status == 429, "\(refused.text)")
        let retryAfter = try #require(refused.headers[.retryAfter].flatMap { Int($0) })
        #expect((31...45).contains(retryAfter), "three sends at 4 per minute: \(retryAfter)")
        await relay.close()
    }

    @Test("the quota table forgets buckets that have refilled, and a rate of 0 is no quota")
    func bucketsAreForgottenAndZeroIsNoQuota() {
        let clock = NIOLockedValueBox<UInt64>(0)
        let quotas = SendQuotas(devicePerMinute: 1, topicPerMinute: 0, now: { clock.withLockedValue { $0 } })
        let devices = (1...5000).map { DeviceID(rawValue: Int64($0)) }
        #expect(quotas.admit(devices: devices).allSatisfy { $0 })
        #expect(quotas.admit(devices: devices).allSatisfy { !$0 }, "one per minute: the second is refused")
        clock.withLockedValue { $0 = 61_000_000_000 }
        #expect(quotas.admit(devices: [devices[0]]) == [true], "a minute later it has one again")
        // 4,000 other devices a minute later: when the table grows, the 4,999 refilled buckets are forgotten.
        let others = (5001...9000).map { DeviceID(rawValue: Int64($0)) }
        #expect(quotas.admit(devices: others).allSatisfy { $0 })
        #expect(quotas.trackedDevices < 5000, "tracked: \(quotas.trackedDevices)")
        for _ in 0..<1000 { #expect(quotas.admit(topic: .topic("t"), project: ProjectID(rawValue: 1))) }
    }
}
