import Foundation
import HTTPTypes
import PushRelayStore
import Testing

@testable import PushRelayServer

/// Topics in process: the Instance ID server API (single and batch relations, info), the device's own topic
/// routes, topic and condition sends with their fan-out, and their errors. What needs real peers and processes
/// (curl streams, the CLI deleting a project under the running daemon) stays in `EndToEndTests.TopicTests`.
@Suite("Routes: topics and Instance ID")
struct TopicRouteTests {
    /// A relay with one project.
    struct Fixture {
        let relay: RelayHarness
        let project: ProjectCredentials
        var key: String { project.serverKey }

        init(configure: (inout SQLiteStore.Configuration) -> Void = { _ in }) async throws {
            relay = try RelayHarness(configure: configure)
            project = try await relay.createProject()
        }

        /// A call with the project's server key (or `key`, or none when nil is passed for `key`).
        func call(_ method: String, _ path: String, body: String? = nil, key: String?? = .none) async throws
            -> (status: Int, body: String)
        {
            var headers: HTTPFields = [:]
            if let serverKey = key ?? project.serverKey { headers[.authorization] = "key=\(serverKey)" }
            if body != nil { headers[.contentType] = "application/json" }
            let answer = try await relay.request(
                try #require(HTTPRequest.Method(method)), path, headers: headers, body: body ?? "")
            return (answer.status, answer.text)
        }

        /// A device route call with a Bearer secret.
        func deviceCall(_ method: String, _ path: String, secret: String) async throws -> (status: Int, body: String) {
            let answer = try await relay.request(
                try #require(HTTPRequest.Method(method)), path, headers: [.authorization: "Bearer \(secret)"])
            return (answer.status, answer.text)
        }

        /// `POST /fcm/send` with `key`.
        func send(_ json: String, key: String) async throws -> (status: Int, body: String) {
            let answer = try await relay.send(json, key: key)
            return (answer.status, answer.text)
        }

        /// `POST /iid/v1:batchAdd` (or `batchRemove`); the per-token results.
        func batch(_ add: Bool, to: String, tokens: [String]) async throws -> [[String: Any]] {
            let list = tokens.map { "\"\($0)\"" }.joined(separator: ",")
            let answer = try await call(
                "POST", add ? "/iid/v1:batchAdd" : "/iid/v1:batchRemove",
                body: #"{"to": "\#(to)", "registration_tokens": [\#(list)]}"#)
            #expect(answer.status == 200, "\(answer.body)")
            return try jsonObject(answer.body)["results"] as? [[String: Any]] ?? []
        }

        /// The topic names `GET /iid/info/{token}?details=true` lists.
        func topics(of token: String) async throws -> [String: Any] {
            let answer = try await call("GET", "/iid/info/\(token)?details=true")
            #expect(answer.status == 200, "\(answer.body)")
            let rel = try jsonObject(answer.body)["rel"] as? [String: Any]
            return rel?["topics"] as? [String: Any] ?? [:]
        }

        /// Sends to a topic or condition; returns the topic message id, checking the answer is `{"message_id": N}`.
        func sendToTopic(_ json: String) async throws -> Int64 {
            let answer = try await send(json, key: key)
            #expect(answer.status == 200, "\(answer.body)")
            #expect(answer.body.range(of: #"^\{"message_id":[0-9]+\}$"#, options: .regularExpression) != nil,
                    "\(answer.body)")
            let value = try jsonObject(answer.body)["message_id"]
            #expect(!(value is String))
            return try #require((value as? NSNumber)?.int64Value)
        }

        /// Sends one data message straight to a token; returns its message id.
        func sendMarker(to token: String) async throws -> String {
            try await relay.messageID(#"{"to": "\#(token)", "data": {"marker": "1"}}"#, key: key)
        }
    }

    static let unknownToken = "abcdefghijklmnopqrstuv:APA91b" + String(repeating: "x", count: 140)

    @Test func singleRelationRoutesAndTheirErrors() async throws {
        let f = try await Fixture()
        let device = try await f.relay.registerDevice(f.project)
        let other = try await f.relay.createProject("other")
        let foreign = try await f.relay.registerDevice(other)

        let added = try await f.call("POST", "/iid/v1/\(device.token)/rel/topics/news")
        #expect(added.status == 200)
        #expect(try jsonObject(added.body).isEmpty)
        // Subscribing twice is fine.
        #expect(try await f.call("POST", "/iid/v1/\(device.token)/rel/topics/news").status == 200)
        #expect(try await f.call("POST", "/iid/v1/\(device.token)/rel/topics/a-b_c.d~e%25f").status == 200)

        let unknown = try await f.call("POST", "/iid/v1/\(Self.unknownToken)/rel/topics/news")
        #expect(unknown.status == 404)
        #expect(try jsonObject(unknown.body)["error"] as? String == "NOT_FOUND")
        let foreignAnswer = try await f.call("POST", "/iid/v1/\(foreign.token)/rel/topics/news")
        #expect(foreignAnswer.status == 403)
        #expect(try await f.call("POST", "/iid/v1/\(device.token)/rel/topics/bad!name").status == 400)
        let tooLong = String(repeating: "t", count: 901)
        #expect(try await f.call("POST", "/iid/v1/\(device.token)/rel/topics/\(tooLong)").status == 400)
        #expect(try await f.call("POST", "/iid/v1/\(device.token)/rel/topics/\(String(tooLong.dropLast()))").status == 200)
        #expect(try await f.call("POST", "/iid/v1/\(device.token)/rel/topics/news", key: .some(nil)).status == 401)
        #expect(try await f.call("POST", "/iid/v1/\(device.token)/rel/topics/news", key: "AAAAwrong").status == 401)
        // Another project's key cannot look at this project's device.
        #expect(try await f.call("GET", "/iid/info/\(device.token)?details=true", key: other.serverKey).status == 403)
        #expect(try await f.call("GET", "/iid/info/\(Self.unknownToken)").status == 404)
        #expect(try await f.call("GET", "/iid/info/\(device.token)", key: .some(nil)).status == 401)

        let info = try await jsonObject(try f.call("GET", "/iid/info/\(device.token)?details=true").body)
        #expect(info["application"] as? String == "br.com.siecola.shop")
        #expect(info["authorizedEntity"] as? String == String(f.project.project.senderID))
        #expect(info["platform"] as? String == "IOS")
        let topics = try await f.topics(of: device.token)
        #expect(Set(topics.keys) == ["news", "a-b_c.d~e%f", String(tooLong.dropLast())])
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        let addDate = (topics["news"] as? [String: Any])?["addDate"] as? String
        #expect(addDate == formatter.string(from: Date()) || addDate == formatter.string(from: Date() - 60))
        // Without details, no rel.
        #expect(try await jsonObject(try f.call("GET", "/iid/info/\(device.token)").body)["rel"] == nil)

        let removed = try await f.call("DELETE", "/iid/v1/\(device.token)/rel/topics/news")
        #expect(removed.status == 200)
        #expect(try await f.call("DELETE", "/iid/v1/\(Self.unknownToken)/rel/topics/news").status == 404)
        #expect(try await f.call("DELETE", "/iid/v1/\(foreign.token)/rel/topics/news").status == 403)
        #expect(try await f.call("DELETE", "/iid/v1/\(device.token)/rel/topics/news", key: .some(nil)).status == 401)
        #expect(try await f.topics(of: device.token)["news"] == nil)
        await f.relay.close()
    }

    /// A device at the topic limit: both single-subscription routes answer `400 TOO_MANY_TOPICS` with a message;
    /// a topic it already holds is still fine.
    @Test func singleSubscriptionRoutesAnswerTooManyTopics() async throws {
        let f = try await Fixture(configure: { $0.maxTopicsPerDevice = 2 })
        let device = try await f.relay.registerDevice(f.project)
        #expect(try await f.call("POST", "/iid/v1/\(device.token)/rel/topics/a").status == 200)
        #expect(try await f.deviceCall("POST", "/v1/topics/b", secret: device.secret).status == 200)
        let iid = try await f.call("POST", "/iid/v1/\(device.token)/rel/topics/c")
        let own = try await f.deviceCall("POST", "/v1/topics/c", secret: device.secret)
        for answer in [iid, own] {
            #expect(answer.status == 400, "\(answer.body)")
            let object = try jsonObject(answer.body)
            #expect(object["error"] as? String == "TOO_MANY_TOPICS")
            #expect(object["message"] as? String == "the device holds the maximum number of topics")
        }
        #expect(try await f.call("POST", "/iid/v1/\(device.token)/rel/topics/b").status == 200)
        #expect(try await f.deviceCall("POST", "/v1/topics/a", secret: device.secret).status == 200)
        #expect(Set(try await f.topics(of: device.token).keys) == ["a", "b"])
        await f.relay.close()
    }

    /// `restricted_package_name` on a topic or condition send: the answer is the message id, and only the
    /// subscribers of that app get a copy.
    @Test func restrictedPackageNameLimitsTheFanOut() async throws {
        let f = try await Fixture()
        let x = try await f.relay.registerDevice(f.project, app: "com.x")
        let y = try await f.relay.registerDevice(f.project, app: "com.y")
        #expect(try await f.batch(true, to: "gone", tokens: [x.token, y.token]).allSatisfy(\.isEmpty))
        _ = try await f.sendToTopic(#"{"to": "/topics/gone", "restricted_package_name": "com.zzz", "data": {"k": "rpn"}}"#)
        _ = try await f.sendToTopic(
            #"{"condition": "'gone' in topics", "restricted_package_name": "com.zzz", "data": {"k": "rpn"}}"#)
        _ = try await f.sendToTopic(#"{"to": "/topics/gone", "restricted_package_name": "com.x", "data": {"k": "for-x"}}"#)
        _ = try await f.sendToTopic(
            #"{"condition": "'gone' in topics", "restricted_package_name": "com.y", "data": {"k": "for-y"}}"#)
        // Expanded oldest first: once a device has its own copy, the earlier messages were expanded too.
        for (device, mine) in [(x, "for-x"), (y, "for-y")] {
            let stream = try await f.relay.openStream(secret: device.secret)
            defer { stream.close() }
            let text = try await stream.waitFor("the copy for \(mine)") { $0.contains(mine) }
            let values = StreamEvent.parse(text).compactMap { try? jsonObject($0.data)["k"] as? String }
            #expect(values == [mine])
        }
        await f.relay.close()
    }

    @Test func batchRoutesAnswerPerTokenInOrder() async throws {
        let f = try await Fixture()
        let device = try await f.relay.registerDevice(f.project)
        let second = try await f.relay.registerDevice(f.project)
        let other = try await f.relay.createProject("other")
        let foreign = try await f.relay.registerDevice(other)

        let results = try await f.batch(true, to: "/topics/sports", tokens: [device.token, Self.unknownToken, foreign.token, "garbage"])
        #expect(results.count == 4)
        #expect(results[0].isEmpty)
        #expect(results[1]["error"] as? String == "NOT_FOUND")
        #expect(results[2]["error"] as? String == "INVALID_ARGUMENT")
        #expect(results[3]["error"] as? String == "INVALID_ARGUMENT")
        // The prefix is optional.
        #expect(try await f.batch(true, to: "sports", tokens: [second.token]).map(\.isEmpty) == [true])
        #expect(Set(try await f.topics(of: device.token).keys) == ["sports"])
        #expect(Set(try await f.topics(of: second.token).keys) == ["sports"])
        // The other project's device was not touched.
        let foreignInfo = try await f.call("GET", "/iid/info/\(foreign.token)?details=true", key: other.serverKey)
        #expect(foreignInfo.status == 200)
        #expect(((try jsonObject(foreignInfo.body)["rel"] as? [String: Any])?["topics"] as? [String: Any] ?? [:]).isEmpty)

        let invalid = try await f.call(
            "POST", "/iid/v1:batchAdd", body: #"{"to": "/topics/bad name", "registration_tokens": ["\#(device.token)"]}"#)
        #expect(invalid.status == 400)
        let empty = try await f.call("POST", "/iid/v1:batchAdd", body: #"{"to": "/topics/x", "registration_tokens": []}"#)
        #expect(empty.status == 400)
        let tooMany = (0..<1001).map { _ in "\"\(device.token)\"" }.joined(separator: ",")
        let refused = try await f.call("POST", "/iid/v1:batchAdd", body: #"{"to": "x", "registration_tokens": [\#(tooMany)]}"#)
        #expect(refused.status == 400)
        let thousand = (0..<1000).map { _ in "\"\(device.token)\"" }.joined(separator: ",")
        let accepted = try await f.call("POST", "/iid/v1:batchAdd", body: #"{"to": "x", "registration_tokens": [\#(thousand)]}"#)
        #expect(accepted.status == 200)
        #expect((try jsonObject(accepted.body)["results"] as? [Any])?.count == 1000)
        let body = #"{"to": "x", "registration_tokens": ["\#(device.token)"]}"#
        #expect(try await f.call("POST", "/iid/v1:batchAdd", body: body, key: .some(nil)).status == 401)
        #expect(try await f.call("POST", "/iid/v1:batchRemove", body: body, key: "AAAAwrong").status == 401)
        #expect(try await f.call("POST", "/iid/v1:batchAdd", body: "not json").status == 400)

        let removed = try await f.batch(false, to: "/topics/sports", tokens: [device.token, Self.unknownToken, foreign.token])
        #expect(removed.count == 3)
        #expect(removed[0].isEmpty)
        #expect(removed[1]["error"] as? String == "NOT_FOUND")
        #expect(removed[2]["error"] as? String == "INVALID_ARGUMENT")
        #expect(try await f.batch(false, to: "x", tokens: [device.token]).map(\.isEmpty) == [true])
        #expect(try await f.topics(of: device.token).isEmpty)
        #expect(Set(try await f.topics(of: second.token).keys) == ["sports"])
        await f.relay.close()
    }

    @Test func conditionSendsReachExactlyTheMatchingDevices() async throws {
        let f = try await Fixture()
        // Devices × subscriptions.
        let subscriptions: [Set<String>] = [[], ["a"], ["a", "b"], ["a", "c"], ["b", "c"], ["a", "b", "c"], ["b"]]
        let devices = try await f.relay.registerDevices(f.project, count: subscriptions.count)
        for topic in ["a", "b", "c"] {
            let tokens = zip(devices, subscriptions).filter { $0.1.contains(topic) }.map(\.0.token)
            #expect(try await f.batch(true, to: "/topics/\(topic)", tokens: tokens).allSatisfy(\.isEmpty))
        }
        // Conditions × expected recipients (indices into `devices`).
        let table: [(condition: String, expected: Set<Int>)] = [
            ("'a' in topics && ('b' in topics || 'c' in topics)", [2, 3, 5]),
            ("'a' in topics || 'b' in topics", [1, 2, 3, 4, 5, 6]),
            ("'c' in topics", [3, 4, 5]),
            ("('a' in topics && 'b' in topics) || ('b' in topics && 'c' in topics)", [2, 4, 5]),
            ("'a' in topics && 'b' in topics && 'c' in topics && 'd' in topics && 'e' in topics", []),
            ("\"b\" in topics && !('a' in topics)", [4, 6]),
        ]
        for (index, row) in table.enumerated() {
            let condition = row.condition.replacingOccurrences(of: "\"", with: "\\\"")
            _ = try await f.sendToTopic(#"{"condition": "\#(condition)", "data": {"row": "\#(index)"}}"#)
        }
        // A last message to a topic every device holds: the fan-out works through topic messages in order.
        _ = try await f.batch(true, to: "all", tokens: devices.map(\.token))
        _ = try await f.sendToTopic(#"{"to": "/topics/all", "data": {"row": "end"}}"#)
        for (deviceIndex, device) in devices.enumerated() {
            let stream = try await f.relay.openStream(secret: device.secret)
            defer { stream.close() }
            // Copies are numbered in topic-message order and the stream writes in id order: once the end marker is
            // there, every earlier row for this device is too.
            let text = try await stream.waitFor("the end marker") { $0.contains(#""row":"end""#) }
            let rows = Set(StreamEvent.parse(text).compactMap { try? jsonObject($0.data)["row"] as? String })
            let expected = Set(table.indices.filter { table[$0].expected.contains(deviceIndex) }.map(String.init))
            #expect(rows == expected.union(["end"]), "device \(deviceIndex) with \(subscriptions[deviceIndex])")
        }
        await f.relay.close()
    }

    @Test func malformedConditionsAreInvalidParameters() async throws {
        let f = try await Fixture()
        let malformed = [
            "'a' in topics &&",
            "'a' in topics && ('b' in topics",
            "a in topics",
            "'a' in topics && 'b' in topics && 'c' in topics && 'd' in topics && 'e' in topics && 'f' in topics",
            "'bad name' in topics",
            // Satisfied by a device without any subscription: refused (the fan-out only looks at subscribers).
            "!('a' in topics)",
            "'a' in topics || !('b' in topics)",
            "",
        ]
        for condition in malformed {
            let answer = try await f.send(#"{"condition": "\#(condition)", "data": {"k": "v"}}"#, key: f.key)
            #expect(answer.status == 400, "\(condition): \(answer.body)")
            #expect(answer.body.contains("InvalidParameters"), "\(condition): \(answer.body)")
        }
        let badTopic = try await f.send(#"{"to": "/topics/bad name"}"#, key: f.key)
        #expect(badTopic.status == 400)
        #expect(badTopic.body.contains("InvalidParameters"))
        // A topic send without a key is refused like any send.
        #expect(try await f.send(#"{"to": "/topics/x"}"#, key: "AAAAwrong").status == 401)
        await f.relay.close()
    }

    @Test func aDeviceSubscribedAfterTheSendDoesNotGetIt() async throws {
        let f = try await Fixture()
        let early = try await f.relay.registerDevice(f.project)
        let late = try await f.relay.registerDevice(f.project)
        #expect(try await f.batch(true, to: "late", tokens: [early.token]).allSatisfy(\.isEmpty))
        _ = try await f.sendToTopic(#"{"to": "/topics/late", "data": {"n": "before"}}"#)
        // Subscribed right after the answer: possibly while the message is still being expanded.
        #expect(try await f.call("POST", "/iid/v1/\(late.token)/rel/topics/late").status == 200)
        let earlyStream = try await f.relay.openStream(secret: early.secret)
        defer { earlyStream.close() }
        try await earlyStream.waitFor("the topic message") { $0.contains("before") }
        let marker = try await f.sendMarker(to: late.token)
        let lateStream = try await f.relay.openStream(secret: late.secret)
        defer { lateStream.close() }
        let text = try await lateStream.waitFor("the marker") { StreamEvent.parse($0).contains { $0.id == marker } }
        #expect(!text.contains("before"))
        // A later send reaches it.
        _ = try await f.sendToTopic(#"{"to": "/topics/late", "data": {"n": "after"}}"#)
        try await lateStream.waitFor("the later topic message") { $0.contains("after") }
        await f.relay.close()
    }

    @Test func theDeviceSubscribesItself() async throws {
        let f = try await Fixture()
        let device = try await f.relay.registerDevice(f.project)
        #expect(try await f.deviceCall("POST", "/v1/topics/weather", secret: device.secret).status == 200)
        // The optional `/topics/` prefix, percent-encoded in the path segment, is accepted and stripped.
        #expect(try await f.deviceCall("POST", "/v1/topics/%2Ftopics%2Frain", secret: device.secret).status == 200)
        #expect(try await f.deviceCall("POST", "/v1/topics/bad!name", secret: device.secret).status == 400)
        #expect(try await f.deviceCall("POST", "/v1/topics/weather", secret: "wrong").status == 401)
        #expect(Set(try await f.topics(of: device.token).keys) == ["weather", "rain"])
        let stream = try await f.relay.openStream(secret: device.secret)
        defer { stream.close() }
        _ = try await f.sendToTopic(#"{"to": "/topics/weather", "data": {"n": "sunny"}}"#)
        let text = try await stream.waitFor("the topic message") { $0.contains("sunny") }
        #expect(try jsonObject(try #require(StreamEvent.parse(text).last).data)["from"] as? String == "/topics/weather")
        #expect(try await f.deviceCall("DELETE", "/v1/topics/weather", secret: device.secret).status == 200)
        #expect(try await f.topics(of: device.token)["weather"] == nil)
        _ = try await f.sendToTopic(#"{"to": "/topics/weather", "data": {"n": "rainy"}}"#)
        let marker = try await f.sendMarker(to: device.token)
        let after = try await stream.waitFor("the marker") { StreamEvent.parse($0).contains { $0.id == marker } }
        #expect(!after.contains("rainy"))
        await f.relay.close()
    }
}

/// A JSON object from text.
func jsonObject(_ text: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a JSON object: \(text)")
}
