import Foundation
import HTTPTypes
import PushRelayHTTP
import PushRelayStore
import Testing

@testable import PushRelayServer

/// `POST /v1/ack` in process: the memory path (a device secret in memory) and the store path (a secret the store
/// must look up on a reader thread) delete the same messages and answer the same way; bad requests change nothing.
@Suite("Routes: acknowledgements")
struct AckRouteTests {
    private func ack(_ relay: RelayHarness, secret: String?, _ body: String, origin: String? = nil) async throws
        -> RelayHarness.Answer
    {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let secret { headers[.authorization] = "Bearer \(secret)" }
        if let origin { headers[.origin] = origin }
        return try await relay.request(.post, "/v1/ack", headers: headers, body: body)
    }

    /// A relay with one registered device and one message queued for it (its id).
    private func oneDeviceWithOneMessage() async throws -> (RelayHarness, TestDevice, String) {
        let relay = try RelayHarness()
        let project = try await relay.createProject()
        let device = try await relay.registerDevice(project)
        let id = try await relay.messageID(#"{"to": "\#(device.token)", "data": {"k": "v"}}"#, key: project.serverKey)
        return (relay, device, id)
    }

    private func pendingIDs(_ relay: RelayHarness, _ device: TestDevice) async throws -> [String] {
        let found = try #require(try await relay.store.resolveTokens([device.token]).first ?? nil)
        return try await relay.store.pendingMessages(for: found.id, after: nil, limit: 100).map { "\($0.id)" }
    }

    @Test("the store path caches the secret; the memory path then acknowledges; both delete and count")
    func bothPathsAcknowledge() async throws {
        // The cache answers only within `authRecheckInterval` of an epoch check: an hour, so that which path an
        // acknowledgement takes does not depend on how fast a loaded host runs the test.
        let relay = try RelayHarness(configure: { $0.authRecheckInterval = .seconds(3600) })
        let project = try await relay.createProject()
        let device = try await relay.registerDevice(project)
        var ids: [String] = []
        for n in 0..<4 {
            ids.append(try await relay.messageID(#"{"to": "\#(device.token)", "data": {"n": "\#(n)"}}"#, key: project.serverKey))
        }
        // Registration does not put the secret in memory: the first acknowledgement looks it up (the store path).
        #expect(relay.store.cachedDevice(secret: device.secret) == nil)
        let first = try await ack(relay, secret: device.secret, #"{"ids": ["\#(ids[0])", "\#(ids[1])"]}"#)
        #expect(first.status == 200)
        #expect(try first.json()["acknowledged"] as? Int == 2)
        #expect(try await pendingIDs(relay, device) == [ids[2], ids[3]])

        // Now the secret is in memory: the memory path, numeric ids accepted, unknown ids ignored.
        #expect(relay.store.cachedDevice(secret: device.secret) != nil)
        let second = try await ack(relay, secret: device.secret, #"{"ids": [\#(ids[2]), "\#(ids[3])", "999999"]}"#)
        #expect(second.status == 200)
        #expect(try second.json()["acknowledged"] as? Int == 2)
        #expect(try await pendingIDs(relay, device).isEmpty)
        await relay.close()
    }

    @Test("missing secret, unknown secret, malformed body and bad ids are refused in JSON; nothing is deleted")
    func refusals() async throws {
        let (relay, device, id) = try await oneDeviceWithOneMessage()
        _ = try await ack(relay, secret: device.secret, #"{"ids": []}"#)  // the secret is in memory from here
        let cases: [(secret: String?, body: String, status: Int, error: String)] = [
            (nil, #"{"ids": ["\#(id)"]}"#, 401, "UNAUTHENTICATED"),
            ("unknown-secret", #"{"ids": ["\#(id)"]}"#, 401, "UNAUTHENTICATED"),
            (device.secret, #"{"ids": "\#(id)"}"#, 400, "INVALID_ARGUMENT"),
            (device.secret, #"{"ids": ["x1"]}"#, 400, "INVALID_ARGUMENT"),
            // Past the stores' integer: no message has such an id (it wrapped to a negative row value before).
            (device.secret, #"{"ids": ["\#(id)", "9223372036854775808"]}"#, 400, "INVALID_ARGUMENT"),
            (device.secret, #"{"ids": [18446744073709551615]}"#, 400, "INVALID_ARGUMENT"),
            (device.secret, "not json", 400, "INVALID_ARGUMENT"),
        ]
        for item in cases {
            let answer = try await ack(relay, secret: item.secret, item.body)
            #expect(answer.status == item.status, "\(item.body): \(answer.text)")
            #expect(answer.contentType?.hasPrefix("application/json") == true, "\(item.body): \(answer.contentType ?? "")")
            #expect(try answer.json()["error"] as? String == item.error, "\(item.body): \(answer.text)")
        }
        #expect(try await pendingIDs(relay, device) == [id])
        await relay.close()
    }

    @Test("a Last-Event-ID past the stores' integer is refused, not taken as a cursor past every message")
    func lastEventIDOutOfRange() async throws {
        let (relay, device, id) = try await oneDeviceWithOneMessage()
        for lastEventID in ["9223372036854775808", "18446744073709551615", "99999999999999999999", "-1"] {
            let response = try await relay.respond(
                .get, "/v1/stream",
                headers: [.authorization: "Bearer \(device.secret)", HTTPField.Name("Last-Event-ID")!: lastEventID])
            #expect(response.head.status == .badRequest, "\(lastEventID)")
        }
        #expect(try await pendingIDs(relay, device) == [id], "nothing acknowledged")
        // The largest storable id is a cursor like any other: it acknowledges every pending message.
        let writer = try await relay.openStream(secret: device.secret, lastEventID: "9223372036854775807")
        writer.close()
        #expect(try await pendingIDs(relay, device).isEmpty)
        await relay.close()
    }

    @Test("an allowed web origin gets Access-Control-Allow-Origin on the event-loop path too")
    func corsOnTheEventLoopPath() async throws {
        var options = RelayApplication.Options()
        options.corsAllowedOrigins = ["https://shop.example.com"]
        let relay = try RelayHarness(options: options)
        let project = try await relay.createProject()
        let device = try await relay.registerDevice(project)
        for _ in 0..<2 {  // the first answer comes from the store path, the second from memory
            let allowed = try await ack(relay, secret: device.secret, #"{"ids": []}"#, origin: "https://shop.example.com")
            #expect(allowed.status == 200)
            #expect(allowed.headers[.accessControlAllowOrigin] == "https://shop.example.com")
            let other = try await ack(relay, secret: device.secret, #"{"ids": []}"#, origin: "https://evil.example")
            #expect(other.headers[.accessControlAllowOrigin] == nil)
        }
        await relay.close()
    }
}
