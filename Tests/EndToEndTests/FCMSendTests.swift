import Foundation
import TestSupport
import Testing

/// FCM legacy semantics end to end: errors, limits and queue policy as a sender and a device see them.
@Suite(.serialized) struct FCMSendTests {
    /// A started daemon with one project and one registered device.
    struct Fixture {
        let daemon: Daemon
        let keys: ProjectKeys
        let device: DeviceKeys

        init() async throws {
            daemon = try Daemon()
            try await daemon.start()
            keys = try await daemon.createProject()
            device = try await daemon.registerDevice(keys)
        }

        func send(_ json: String) async throws -> (status: Int, body: String) {
            try await daemon.send(json, serverKey: keys.serverKey)
        }

        func results(_ json: String) async throws -> [[String: Any]] {
            let answer = try await send(json)
            #expect(answer.status == 200, "\(answer.body)")
            return try jsonObject(answer.body)["results"] as? [[String: Any]] ?? []
        }

        /// Connects, collects events until `done` holds, disconnects.
        func receive(timeout: Duration = .seconds(10), until done: @escaping ([ServerSentEvent]) -> Bool) async throws -> [ServerSentEvent] {
            let stream = try daemon.openStream(secret: device.secret)
            defer { stream.stop() }
            let text = try await stream.waitFor(timeout: timeout, "events") { done(parseEvents($0)) }
            return parseEvents(text)
        }
    }

    static let otherWellFormedToken = "abcdefghijklmnopqrstuv:APA91b" + String(repeating: "x", count: 140)

    @Test func perTargetErrorsInRequestOrder() async throws {
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
        let answer = try await jsonObject(try f.send(#"{"registration_ids": ["\#(f.device.token)", ""]}"#).body)
        #expect(answer["success"] as? Int == 1)
        #expect(answer["failure"] as? Int == 1)
        #expect(answer["multicast_id"] is Int)
    }

    @Test func messageWideErrors() async throws {
        let f = try await Fixture()
        let to = f.device.token
        #expect(try await f.results(#"{"to": "\#(to)", "data": {"gcm.x": "1"}}"#).first?["error"] as? String == "InvalidDataKey")
        #expect(try await f.results(#"{"to": "\#(to)", "data": {"from": "1"}}"#).first?["error"] as? String == "InvalidDataKey")
        #expect(try await f.results(#"{"to": "\#(to)", "time_to_live": 2419201}"#).first?["error"] as? String == "InvalidTtl")
        #expect(try await f.results(#"{"to": "\#(to)", "time_to_live": -1}"#).first?["error"] as? String == "InvalidTtl")
        #expect(try await f.results(#"{"data": {"k": "v"}}"#).first?["error"] as? String == "MissingRegistration")
    }

    @Test func payloadOf4096BytesIsAcceptedAnd4097Refused() async throws {
        let f = try await Fixture()
        // The payload counts keys and values of data and notification: "k" + 4095 bytes = 4096.
        let fits = String(repeating: "v", count: 4095)
        #expect(try await f.results(#"{"to": "\#(f.device.token)", "data": {"k": "\#(fits)"}}"#).first?["message_id"] is String)
        let tooBig = fits + "v"
        #expect(try await f.results(#"{"to": "\#(f.device.token)", "data": {"k": "\#(tooBig)"}}"#).first?["error"] as? String == "MessageTooBig")
        // Refused means not stored: only the first arrives.
        let events = try await f.receive { $0.count >= 1 }
        try await Task.sleep(for: .milliseconds(300))
        #expect(events.count == 1)
    }

    @Test func thousandTokensAcceptedAndThousandAndOneRefused() async throws {
        let f = try await Fixture()
        let others = (0..<999).map { i in "\"\(String(format: "%022d", i)):APA91b\(String(repeating: "y", count: 140))\"" }
        let thousand = #"{"registration_ids": ["\#(f.device.token)", \#(others.joined(separator: ","))], "data": {"k": "v"}}"#
        let answer = try await f.send(thousand)
        #expect(answer.status == 200)
        let json = try jsonObject(answer.body)
        #expect(json["success"] as? Int == 1)
        #expect(json["failure"] as? Int == 999)
        #expect((json["results"] as? [[String: Any]])?.count == 1000)

        let extra = "\"\(String(format: "%022d", 1000)):APA91b\(String(repeating: "y", count: 140))\""
        let tooMany = #"{"registration_ids": ["\#(f.device.token)", \#(others.joined(separator: ",")), \#(extra)]}"#
        let refused = try await f.send(tooMany)
        #expect(refused.status == 400)
        #expect(refused.body.contains("exceeds maximum allowed (1000)"))
    }

    @Test func malformedRequestsGetFCMPlainTextAnswers() async throws {
        let f = try await Fixture()
        let bad = try await f.send("x")
        #expect(bad.status == 400)
        #expect(bad.body.contains("JSON_PARSING_ERROR"))
        let wrongType = try await f.send(#"{"to": 5}"#)
        #expect(wrongType.status == 400)
        #expect(wrongType.body.contains("\"to\""))
        let empty = try await f.send(#"{"registration_ids": []}"#)
        #expect(empty.status == 400)
        #expect(empty.body.contains("cannot be empty"))
    }

    @Test func formEncodedPlainTextVariant() async throws {
        let f = try await Fixture()
        let result = try await run("curl", [
            "-sS", "-X", "POST", "\(f.daemon.baseURL)/fcm/send", "-H", "Authorization: key=\(f.keys.serverKey)",
            "-H", "Content-Type: application/x-www-form-urlencoded;charset=UTF-8",
            "--data-urlencode", "registration_id=\(f.device.token)", "--data-urlencode", "data.orderID=3",
        ])
        #expect(result.stdout.hasPrefix("id="))
        let id = String(result.stdout.dropFirst(3).prefix { $0.isNumber })
        let events = try await f.receive { $0.contains { $0.id == id } }
        let envelope = try jsonObject(try #require(events.first { $0.id == id }).data)
        #expect(envelope["orderID"] as? String == "3")
    }

    @Test func unregisteredTokenAnswersNotRegistered() async throws {
        let f = try await Fixture()
        let delete = try await run("curl", [
            "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "DELETE", "\(f.daemon.baseURL)/v1/register",
            "-H", "Authorization: Bearer \(f.device.secret)",
        ])
        #expect(delete.stdout == "200")
        #expect(try await f.results(#"{"to": "\#(f.device.token)"}"#).first?["error"] as? String == "NotRegistered")
        // The secret no longer opens a stream.
        let stream = try await run("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(f.daemon.baseURL)/v1/stream",
                                      "-H", "Authorization: Bearer \(f.device.secret)"])
        #expect(stream.stdout == "401")
    }

    @Test func anotherProjectsTokenAnswersMismatchSenderId() async throws {
        let f = try await Fixture()
        let other = try await f.daemon.createProject("other")
        let answer = try await f.daemon.send(#"{"to": "\#(f.device.token)"}"#, serverKey: other.serverKey)
        let results = try jsonObject(answer.body)["results"] as? [[String: Any]]
        #expect(results?.first?["error"] as? String == "MismatchSenderId")
    }

    @Test func collapseKeyReplacesThePendingMessage() async throws {
        let f = try await Fixture()
        _ = try await f.results(#"{"to": "\#(f.device.token)", "collapse_key": "score", "data": {"n": "1"}}"#)
        let second = try await f.results(#"{"to": "\#(f.device.token)", "collapse_key": "score", "data": {"n": "2"}}"#)
        let id = try #require(second.first?["message_id"] as? String)
        let events = try await f.receive { $0.contains { $0.id == id } }
        try await Task.sleep(for: .milliseconds(300))
        #expect(events.count == 1)
        #expect(try jsonObject(events[0].data)["n"] as? String == "2")
        #expect(try jsonObject(events[0].data)["collapse_key"] as? String == "score")
    }

    @Test func timeToLiveZeroIsNowOrNever() async throws {
        let f = try await Fixture()
        // Offline: dropped, never stored.
        _ = try await f.results(#"{"to": "\#(f.device.token)", "time_to_live": 0, "data": {"n": "offline"}}"#)
        let marker = try await #require(try f.results(#"{"to": "\#(f.device.token)", "data": {"n": "marker"}}"#).first?["message_id"] as? String)
        let stream = try f.daemon.openStream(secret: f.device.secret)
        defer { stream.stop() }
        let text = try await stream.waitFor("marker") { parseEvents($0).contains { $0.id == marker } }
        #expect(!text.contains("offline"))
        // Online: delivered at once.
        let live = try await #require(try f.results(#"{"to": "\#(f.device.token)", "time_to_live": 0, "data": {"n": "live"}}"#).first?["message_id"] as? String)
        try await stream.waitFor("live ttl 0") { parseEvents($0).contains { $0.id == live } }
    }

    @Test func expiredMessagesAreNotDelivered() async throws {
        let f = try await Fixture()
        _ = try await f.results(#"{"to": "\#(f.device.token)", "time_to_live": 1, "data": {"n": "short"}}"#)
        try await Task.sleep(for: .milliseconds(2200))
        let marker = try await #require(try f.results(#"{"to": "\#(f.device.token)", "data": {"n": "marker"}}"#).first?["message_id"] as? String)
        let events = try await f.receive { $0.contains { $0.id == marker } }
        #expect(!events.contains { $0.data.contains("short") })
    }

    @Test func moreThanHundredPendingBecomeDeletedMessages() async throws {
        let f = try await Fixture()
        var last = ""
        for n in 1...101 {
            last = try await #require(try f.results(#"{"to": "\#(f.device.token)", "data": {"n": "\#(n)"}}"#).first?["message_id"] as? String)
        }
        let events = try await f.receive { $0.contains { $0.id == last } }
        try await Task.sleep(for: .milliseconds(300))
        #expect(events.count == 2)
        #expect(try jsonObject(events[0].data)["message_type"] as? String == "deleted_messages")
        #expect(try jsonObject(events[1].data)["n"] as? String == "101")
    }

    @Test func dryRunValidatesWithoutDelivering() async throws {
        let f = try await Fixture()
        let results = try await f.results(#"{"to": "\#(f.device.token)", "dry_run": true, "data": {"n": "dry"}}"#)
        #expect(results.first?["message_id"] as? String == "fake_message_id")
        let marker = try await #require(try f.results(#"{"to": "\#(f.device.token)", "data": {"n": "real"}}"#).first?["message_id"] as? String)
        let events = try await f.receive { $0.contains { $0.id == marker } }
        #expect(!events.contains { $0.data.contains("dry") })
    }

    @Test func existingFCMSenderLibraryWorksByEndpointURLOnly() async throws {
        let f = try await Fixture()
        let script = """
            import json, sys
            from pyfcm import FCMNotification
            base, key, token = sys.argv[1], sys.argv[2], sys.argv[3]
            FCMNotification.FCM_END_POINT = base + "/fcm/send"
            push = FCMNotification(api_key=key)
            result = push.notify_single_device(
                registration_id=token, message_title="Provedor de Mensagens", message_body="Status do pedido",
                extra_notification_kwargs={"orderInfo": {"infoReason": "Status de pedido", "orderID": 3,
                    "userEmail": "matilde@siecola.com.br", "newOrderStatus": "Novo pedido"}},
                content_available=True)
            print(json.dumps(result))
            """
        let sent = try await run("python3", ["-c", script, f.daemon.baseURL, f.keys.serverKey, f.device.token])
        #expect(sent.status == 0, "\(sent.stderr)")
        let answer = try jsonObject(sent.stdout)
        #expect(answer["success"] as? Int == 1)
        let id = try #require((answer["results"] as? [[String: Any]])?.first?["message_id"] as? String)
        let events = try await f.receive { $0.contains { $0.id == id } }
        try expectScenarioEnvelope(try #require(events.first { $0.id == id }).data, messageID: id, senderID: f.keys.senderID)

        // Removed from PushRelay: the library sees NotRegistered.
        _ = try await run("curl", ["-s", "-X", "DELETE", "\(f.daemon.baseURL)/v1/register", "-H", "Authorization: Bearer \(f.device.secret)"])
        let again = try await run("python3", ["-c", script, f.daemon.baseURL, f.keys.serverKey, f.device.token])
        let failed = try jsonObject(again.stdout)
        #expect(failed["failure"] as? Int == 1)
        #expect((failed["results"] as? [[String: Any]])?.first?["error"] as? String == "NotRegistered")
    }
}
