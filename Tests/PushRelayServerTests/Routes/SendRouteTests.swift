import Foundation
import HTTPTypes
import NIOCore
import PushRelayCore
import PushRelayHTTP
import PushRelayStore
import Testing

@testable import PushRelayServer

/// FCM legacy send semantics in process (`POST /fcm/send` through the router on a temporary store): per-target and
/// message-wide errors, the 4096-byte payload and 1000-token limits, plain-text answers to malformed requests,
/// collapse keys, time to live, the 100-message limit and dry runs, as a sender and a device see them. A refused
/// message is shown not stored by what the device receives before a later marker: the stream writes in id order, so
/// once the marker is there, everything stored before it has been written.
@Suite("Routes: FCM send")
struct SendRouteTests {
    static let otherWellFormedToken = "abcdefghijklmnopqrstuv:APA91b" + String(repeating: "x", count: 140)

    /// A relay with one project and one registered device.
    struct Fixture {
        let relay: RelayHarness
        let key: String
        let device: TestDevice

        init() async throws {
            relay = try RelayHarness()
            let project = try await relay.createProject()
            key = project.serverKey
            device = try await relay.registerDevice(project)
        }

        func send(_ json: String) async throws -> RelayHarness.Answer { try await relay.send(json, key: key) }
        func results(_ json: String) async throws -> [[String: Any]] { try await relay.results(json, key: key) }
        func error(_ json: String) async throws -> String? { try await results(json).first?["error"] as? String }
        func messageID(_ json: String) async throws -> String { try await relay.messageID(json, key: key) }

        /// Sends a marker, opens the device's stream, and returns every event up to and including the marker.
        func deliveredUpToMarker() async throws -> [StreamEvent] {
            let marker = try await messageID(#"{"to": "\#(device.token)", "data": {"n": "marker"}}"#)
            let stream = try await relay.openStream(secret: device.secret)
            defer { stream.close() }
            let events = try await stream.waitForEvents("the marker") { $0.contains { $0.id == marker } }
            #expect(events.last?.id == marker, "events after the marker: \(events)")
            return Array(events.dropLast())
        }

        func close() async { await relay.close() }
    }

    @Test("per-target errors come in request order; success and failure are counted")
    func perTargetErrorsInRequestOrder() async throws {
        let f = try await Fixture()
        let results = try await f.results("""
            {"registration_ids": ["\(f.device.token)", "", "not-a-token", "\(Self.otherWellFormedToken)"],
             "data": {"k": "v"}}
            """)
        #expect(results.count == 4)
        #expect(results[0]["message_id"] is String)
        #expect(results[1]["error"] as? String == "MissingRegistration")
        #expect(results[2]["error"] as? String == "InvalidRegistration")
        #expect(results[3]["error"] as? String == "NotRegistered")
        let answer = try await f.send(#"{"registration_ids": ["\#(f.device.token)", ""]}"#).json()
        #expect(answer["success"] as? Int == 1)
        #expect(answer["failure"] as? Int == 1)
        #expect(answer["multicast_id"] is Int)
        await f.close()
    }

    @Test("message-wide errors: reserved data keys, TTL out of range, no target")
    func messageWideErrors() async throws {
        let f = try await Fixture()
        let to = f.device.token
        #expect(try await f.error(#"{"to": "\#(to)", "data": {"gcm.x": "1"}}"#) == "InvalidDataKey")
        #expect(try await f.error(#"{"to": "\#(to)", "data": {"from": "1"}}"#) == "InvalidDataKey")
        #expect(try await f.error(#"{"to": "\#(to)", "time_to_live": 2419201}"#) == "InvalidTtl")
        #expect(try await f.error(#"{"to": "\#(to)", "time_to_live": -1}"#) == "InvalidTtl")
        #expect(try await f.error(#"{"data": {"k": "v"}}"#) == "MissingRegistration")
        // None of them was stored.
        #expect(try await f.deliveredUpToMarker().isEmpty)
        await f.close()
    }

    @Test("a 4096-byte payload is accepted, 4097 refused with MessageTooBig and not stored")
    func payloadOf4096BytesIsAcceptedAnd4097Refused() async throws {
        let f = try await Fixture()
        // The payload counts keys and values of data and notification: "k" + 4095 bytes = 4096.
        let fits = String(repeating: "v", count: 4095)
        let accepted = try await f.messageID(#"{"to": "\#(f.device.token)", "data": {"k": "\#(fits)"}}"#)
        #expect(try await f.error(#"{"to": "\#(f.device.token)", "data": {"k": "\#(fits)v"}}"#) == "MessageTooBig")
        #expect(try await f.deliveredUpToMarker().map(\.id) == [accepted])
        await f.close()
    }

    @Test("1000 tokens are accepted; 1001 are refused with FCM's plain-text reason")
    func thousandTokensAcceptedAndThousandAndOneRefused() async throws {
        let f = try await Fixture()
        let others = (0..<999).map { i in "\"\(String(format: "%022d", i)):APA91b\(String(repeating: "y", count: 140))\"" }
        let thousand = #"{"registration_ids": ["\#(f.device.token)", \#(others.joined(separator: ","))], "data": {"k": "v"}}"#
        let answer = try await f.send(thousand)
        #expect(answer.status == 200)
        let json = try answer.json()
        #expect(json["success"] as? Int == 1)
        #expect(json["failure"] as? Int == 999)
        #expect((json["results"] as? [[String: Any]])?.count == 1000)

        let extra = "\"\(String(format: "%022d", 1000)):APA91b\(String(repeating: "y", count: 140))\""
        let tooMany = #"{"registration_ids": ["\#(f.device.token)", \#(others.joined(separator: ",")), \#(extra)]}"#
        let refused = try await f.send(tooMany)
        #expect(refused.status == 400)
        #expect(refused.contentType?.hasPrefix("text/plain") == true)
        #expect(refused.text.contains("exceeds maximum allowed (1000)"))
        await f.close()
    }

    /// A refusal comes in the format the body was read in (one rule, `FCMSendRequest.Encoding`): a form without
    /// `Content-Type`, or under a type that only starts like JSON's, is refused in plain text; JSON without
    /// `Content-Type` in JSON.
    @Test("a refused send is answered in the format its body was read in")
    func refusalFollowsTheBodysFormat() async throws {
        let f = try await Fixture()
        let cases: [(contentType: String?, body: String, json: Bool)] = [
            (nil, "registration_id=\(f.device.token)&priority=x", false),
            (nil, "to=/topics/x!", false),
            ("application/jsonx", "registration_id=\(f.device.token)&priority=x", false),
            ("application/json-seq", "registration_id=\(f.device.token)&priority=x", false),
            (nil, #"{"to": "\#(f.device.token)", "priority": "x"}"#, true),
            ("application/json; charset=UTF-8", #"{"to": "\#(f.device.token)", "priority": "x"}"#, true),
        ]
        for (contentType, body, json) in cases {
            var headers: HTTPFields = [.authorization: "key=\(f.key)"]
            if let contentType { headers[.contentType] = contentType }
            let answer = try await f.relay.request(.post, "/fcm/send", headers: headers, body: body)
            let what = "\(contentType ?? "no Content-Type"): \(body)"
            #expect(answer.status == 400, "\(what): \(answer.text)")
            if json {
                #expect(answer.contentType?.hasPrefix("application/json") == true, "\(what): \(answer.text)")
                #expect(answer.text.hasPrefix(#"{"error":"InvalidParameters"#), "\(what): \(answer.text)")
            } else {
                #expect(answer.contentType?.hasPrefix("text/plain") == true, "\(what): \(answer.text)")
                #expect(answer.text.hasPrefix("Error=InvalidParameters"), "\(what): \(answer.text)")
            }
        }
        await f.close()
    }

    @Test("malformed requests get FCM's 400 plain-text answers")
    func malformedRequestsGetFCMPlainTextAnswers() async throws {
        let f = try await Fixture()
        let bad = try await f.send("x")
        #expect(bad.status == 400)
        #expect(bad.contentType?.hasPrefix("text/plain") == true)
        #expect(bad.text.contains("JSON_PARSING_ERROR"))
        let wrongType = try await f.send(#"{"to": 5}"#)
        #expect(wrongType.status == 400)
        #expect(wrongType.text.contains("\"to\""))
        let empty = try await f.send(#"{"registration_ids": []}"#)
        #expect(empty.status == 400)
        #expect(empty.text.contains("cannot be empty"))
        await f.close()
    }

    @Test("no key, an unknown key: 401, nothing stored")
    func authentication() async throws {
        let f = try await Fixture()
        let body = #"{"to": "\#(f.device.token)", "data": {"n": "unauthorized"}}"#
        let missing = try await f.relay.request(.post, "/fcm/send", headers: [.contentType: "application/json"], body: body)
        #expect(missing.status == 401)
        #expect(try await f.relay.send(body, key: "AAAAwrong").status == 401)
        #expect(try await f.deliveredUpToMarker().isEmpty)
        await f.close()
    }

    @Test("an unregistered token answers NotRegistered and its secret opens no stream")
    func unregisteredTokenAnswersNotRegistered() async throws {
        let f = try await Fixture()
        let delete = try await f.relay.request(.delete, "/v1/register", headers: [.authorization: "Bearer \(f.device.secret)"])
        #expect(delete.status == 200)
        #expect(try await f.error(#"{"to": "\#(f.device.token)"}"#) == "NotRegistered")
        let stream = try await f.relay.request(.get, "/v1/stream", headers: [.authorization: "Bearer \(f.device.secret)"])
        #expect(stream.status == 401)
        await f.close()
    }

    @Test("another project's token answers MismatchSenderId")
    func anotherProjectsTokenAnswersMismatchSenderId() async throws {
        let f = try await Fixture()
        let other = try await f.relay.createProject("other")
        let results = try await f.relay.results(#"{"to": "\#(f.device.token)"}"#, key: other.serverKey)
        #expect(results.first?["error"] as? String == "MismatchSenderId")
        await f.close()
    }

    @Test("a collapse key replaces the pending message with the same key")
    func collapseKeyReplacesThePendingMessage() async throws {
        let f = try await Fixture()
        _ = try await f.messageID(#"{"to": "\#(f.device.token)", "collapse_key": "score", "data": {"n": "1"}}"#)
        let second = try await f.messageID(#"{"to": "\#(f.device.token)", "collapse_key": "score", "data": {"n": "2"}}"#)
        let events = try await f.deliveredUpToMarker()
        #expect(events.map(\.id) == [second])
        let envelope = try #require(events.first).json()
        #expect(envelope["n"] as? String == "2")
        #expect(envelope["collapse_key"] as? String == "score")
        await f.close()
    }

    @Test("a fifth collapse key evicts the oldest collapsible message")
    func fifthCollapseKeyEvictsTheOldest() async throws {
        let f = try await Fixture()
        var ids: [String] = []
        for key in ["a", "b", "c", "d", "e"] {
            ids.append(try await f.messageID(#"{"to": "\#(f.device.token)", "collapse_key": "\#(key)", "data": {"k": "\#(key)"}}"#))
        }
        #expect(try await f.deliveredUpToMarker().map(\.id) == Array(ids.dropFirst()))
        await f.close()
    }

    @Test("time to live 0 is now or never: dropped offline, delivered at once online")
    func timeToLiveZeroIsNowOrNever() async throws {
        let f = try await Fixture()
        _ = try await f.results(#"{"to": "\#(f.device.token)", "time_to_live": 0, "data": {"n": "offline"}}"#)
        let marker = try await f.messageID(#"{"to": "\#(f.device.token)", "data": {"n": "marker"}}"#)
        let stream = try await f.relay.openStream(secret: f.device.secret)
        defer { stream.close() }
        let events = try await stream.waitForEvents("the marker") { $0.contains { $0.id == marker } }
        #expect(events.map(\.id) == [marker])
        let live = try await f.messageID(#"{"to": "\#(f.device.token)", "time_to_live": 0, "data": {"n": "live"}}"#)
        let after = try await stream.waitForEvents("the live TTL 0 message") { $0.contains { $0.id == live } }
        #expect(try after.last?.json()["n"] as? String == "live")
        // Never stored: a new stream of the device gets only the marker again (not acknowledged), not the live one.
        stream.close()
        let again = try await f.relay.openStream(secret: f.device.secret)
        defer { again.close() }
        let second = try await f.messageID(#"{"to": "\#(f.device.token)", "data": {"n": "second marker"}}"#)
        let replay = try await again.waitForEvents("the second marker") { $0.contains { $0.id == second } }
        #expect(replay.map(\.id) == [marker, second])
        await f.close()
    }

    /// A stream writes stored rows before time-to-live-0 messages that reach it in the same turn, live or with the
    /// backlog: a time-to-live-0 message is numbered past every id taken, and a `Last-Event-ID` naming it
    /// acknowledges every stored id below it, so a stored row written after it could be acknowledged unseen.
    @Test("a stream writes stored rows before time-to-live-0 messages that arrive with them (live and backlog)")
    func storedRowsBeforeTransientMessages() async throws {
        let f = try await Fixture()
        let hub = f.relay.relay.hub
        let device = try #require(try await f.relay.relay.store.resolveTokens([f.device.token]).first??.id)
        // The backlog: a stored message while no stream is open, then a stream whose first turn also gets a TTL 0
        // message (numbered past the stored one, as the store numbers it).
        let stored = try await f.messageID(#"{"to": "\#(f.device.token)", "data": {"n": "stored"}}"#)
        let storedID = try #require(UInt64(stored))
        let response = try await f.relay.respond(.get, "/v1/stream", headers: [.authorization: "Bearer \(f.device.secret)"])
        let start: @Sendable (any HTTPResponseBodyWriter) -> Void
        switch response.body {
        case .detachedStream(let body): start = body
        default:
            Issue.record("not a stream")
            return
        }
        let writer = RecordingBodyWriter()
        writer.eventLoop.execute {
            start(writer)
            _ = hub.deliverTransient(
                TransientMessage(id: MessageID(storedID + 1), body: Array(#"{"data":{"n":"ttl0"}}"#.utf8)), to: device)
        }
        let backlog = try await writer.waitForEvents("both") { $0.count >= 2 }
        #expect(backlog.map(\.id) == [stored, String(storedID + 1)])
        // Live: a committed row and a TTL 0 message handed over in one turn of the stream's loop.
        let row = StoredMessage(
            id: MessageID(storedID + 10), device: device, kind: .message, body: Array(#"{"data":{"n":"row"}}"#.utf8),
            collapseKey: nil, expiresAt: Date(timeIntervalSinceNow: 60))
        writer.eventLoop.execute {
            _ = hub.deliverTransient(
                TransientMessage(id: MessageID(storedID + 11), body: Array(#"{"data":{"n":"ttl0 live"}}"#.utf8)), to: device)
            hub.deliver([row])
        }
        let live = try await writer.waitForEvents("all four") { $0.count >= 4 }
        #expect(live.dropFirst(2).map(\.id) == [String(storedID + 10), String(storedID + 11)])
        writer.close()
        await f.close()
    }

    @Test("a message past its time to live is not delivered (the clock is moved, not waited for)")
    func expiredMessagesAreNotDelivered() async throws {
        let f = try await Fixture()
        let short = try await f.messageID(#"{"to": "\#(f.device.token)", "time_to_live": 1, "data": {"n": "short"}}"#)
        let long = try await f.messageID(#"{"to": "\#(f.device.token)", "time_to_live": 600, "data": {"n": "long"}}"#)
        f.relay.clock.advance(by: .seconds(2))
        let events = try await f.deliveredUpToMarker()
        #expect(!events.contains { $0.id == short })
        #expect(events.map(\.id) == [long])
        await f.close()
    }

    @Test("the 101st pending message replaces the 100 with one deleted_messages event")
    func moreThanHundredPendingBecomeDeletedMessages() async throws {
        let f = try await Fixture()
        var last = ""
        for n in 1...101 {
            last = try await f.messageID(#"{"to": "\#(f.device.token)", "data": {"n": "\#(n)"}}"#)
        }
        let stream = try await f.relay.openStream(secret: f.device.secret)
        defer { stream.close() }
        let events = try await stream.waitForEvents("the 101st") { $0.contains { $0.id == last } }
        #expect(events.count == 2)
        #expect(try events[0].json()["message_type"] as? String == "deleted_messages")
        #expect(try events[1].json()["n"] as? String == "101")
        await f.close()
    }

    @Test("dry_run validates, answers fake_message_id, stores nothing and counts as no accepted send")
    func dryRunValidatesWithoutDelivering() async throws {
        let f = try await Fixture()
        let results = try await f.results(#"{"to": "\#(f.device.token)", "dry_run": true, "data": {"n": "dry"}}"#)
        #expect(results.first?["message_id"] as? String == "fake_message_id")
        let topic = try await f.relay.send(#"{"to": "/topics/news", "dry_run": true}"#, key: f.key)
        #expect(try topic.json()["message_id"] as? Int == -1, "\(topic.text)")
        // Nothing was committed: pushrelay_sends_accepted_total ("messages committed and answered with a message
        // id") has not moved.
        let metrics = try await f.relay.request(.get, "/metrics")
        #expect(!metrics.text.contains("pushrelay_sends_accepted_total 1"), "\(metrics.text)")
        #expect(metrics.text.contains("pushrelay_sends_accepted_total 0"), "\(metrics.text)")
        #expect(try await f.deliveredUpToMarker().isEmpty)
        await f.close()
    }

    @Test("/gcm/send is the same route")
    func gcmSendAlias() async throws {
        let f = try await Fixture()
        let answer = try await f.relay.request(
            .post, "/gcm/send", headers: [.authorization: "key=\(f.key)", .contentType: "application/json"],
            body: #"{"to": "\#(f.device.token)", "data": {"n": "gcm"}}"#)
        #expect(answer.status == 200)
        let id = try #require((try answer.json()["results"] as? [[String: Any]])?.first?["message_id"] as? String)
        #expect(try await f.deliveredUpToMarker().map(\.id) == [id])
        await f.close()
    }

    @Test("a body over max_send_body_size is refused with 413 before the handler")
    func bodyLimit() async throws {
        var options = RelayApplication.Options()
        options.maxSendBodyBytes = 1024
        let relay = try RelayHarness(options: options)
        let project = try await relay.createProject()
        let big = #"{"to": "x", "data": {"k": "\#(String(repeating: "v", count: 1100))"}}"#
        #expect(try await relay.send(big, key: project.serverKey).status == 413)
        await relay.close()
    }
}
