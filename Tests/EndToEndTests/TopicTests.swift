import Foundation
import TestSupport
import Testing

/// Topics end to end: the Instance ID server API, the device's own topic routes, topic and condition sends, and the
/// cleanup of subscriptions, against the real daemon with curl.
@Suite(.serialized) struct TopicTests {
    /// A started daemon with one project.
    struct Fixture {
        let daemon: Daemon
        let keys: ProjectKeys

        init() async throws {
            daemon = try Daemon()
            try await daemon.start()
            keys = try await daemon.createProject()
        }

        /// A curl call with the project's server key (or `serverKey`, or none when nil is passed for `key`).
        func call(
            _ method: String,
            _ path: String,
            body: String? = nil,
            key: String?? = .none
        ) async throws -> (status: Int, body: String) {
            let serverKey: String? = key ?? keys.serverKey
            var args = ["-sS", "-X", method, "\(daemon.baseURL)\(path)", "-w", "\n%{http_code}"]
            if let serverKey { args += ["-H", "Authorization: key=\(serverKey)"] }
            if body != nil { args += ["-H", "Content-Type: application/json", "--data-binary", "@-"] }
            let result = try await run("curl", args, stdin: body)
            guard result.status == 0 else { throw DaemonError(message: "curl failed: \(result.stderr)") }
            var lines = result.stdout.components(separatedBy: "\n")
            let status = Int(lines.removeLast()) ?? 0
            return (status, lines.joined(separator: "\n"))
        }

        /// A device route call with a Bearer secret.
        func deviceCall(_ method: String, _ path: String, secret: String) async throws -> (status: Int, body: String) {
            let result = try await run("curl", [
                "-sS", "-X", method, "\(daemon.baseURL)\(path)", "-H", "Authorization: Bearer \(secret)",
                "-w", "\n%{http_code}",
            ])
            var lines = result.stdout.components(separatedBy: "\n")
            let status = Int(lines.removeLast()) ?? 0
            return (status, lines.joined(separator: "\n"))
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
            let answer = try await daemon.send(json, serverKey: keys.serverKey)
            #expect(answer.status == 200, "\(answer.body)")
            #expect(answer.body.range(of: #"^\{"message_id":[0-9]+\}$"#, options: .regularExpression) != nil,
                    "\(answer.body)")
            let value = try jsonObject(answer.body)["message_id"]
            #expect(!(value is String))
            return try #require((value as? NSNumber)?.int64Value)
        }

        /// Sends one data message straight to a token; returns its message id.
        func sendMarker(to token: String) async throws -> String {
            let answer = try await daemon.send(#"{"to": "\#(token)", "data": {"marker": "1"}}"#, serverKey: keys.serverKey)
            return try messageID(ofSendResponse: answer.body)
        }
    }

    static let unknownToken = "abcdefghijklmnopqrstuv:APA91b" + String(repeating: "x", count: 140)

    @Test func singleRelationRoutesAndTheirErrors() async throws {
        let f = try await Fixture()
        let device = try await f.daemon.registerDevice(f.keys)
        let other = try await f.daemon.createProject("other")
        let foreign = try await f.daemon.registerDevice(other)

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
        #expect(info["authorizedEntity"] as? String == f.keys.senderID)
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
    }

    @Test func batchRoutesAnswerPerTokenInOrder() async throws {
        let f = try await Fixture()
        let device = try await f.daemon.registerDevice(f.keys)
        let second = try await f.daemon.registerDevice(f.keys)
        let other = try await f.daemon.createProject("other")
        let foreign = try await f.daemon.registerDevice(other)

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
    }

    @Test func scenarioSentToATopicReachesThreeListeners() async throws {
        let f = try await Fixture()
        let listeners = try await f.daemon.registerDevices(f.keys, count: 3)
        let bystander = try await f.daemon.registerDevice(f.keys)
        #expect(try await f.batch(true, to: "/topics/pedidos", tokens: listeners.map(\.token)).allSatisfy(\.isEmpty))
        let streams = try listeners.map { try f.daemon.openStream(secret: $0.secret) }
        defer { streams.forEach { $0.stop() } }
        let quiet = try f.daemon.openStream(secret: bystander.secret)
        defer { quiet.stop() }
        try await Task.sleep(for: .milliseconds(300))  // the streams are open before the send

        let body = scenarioBody.replacingOccurrences(of: "\"TOKEN\"", with: "\"/topics/pedidos\"")
        _ = try await f.sendToTopic(body)
        for stream in streams {
            let text = try await stream.waitFor("the topic message") { text in
                parseEvents(text).contains { $0.data.contains("Provedor de Mensagens") }
            }
            let event = try #require(parseEvents(text).first { $0.data.contains("Provedor de Mensagens") })
            let envelope = try jsonObject(event.data)
            #expect(envelope["from"] as? String == "/topics/pedidos")
            try expectScenarioEnvelope(event.data, messageID: try #require(event.id), senderID: f.keys.senderID)
        }
        let marker = try await f.sendMarker(to: bystander.token)
        let text = try await quiet.waitFor("the marker") { parseEvents($0).contains { $0.id == marker } }
        #expect(!text.contains("Provedor de Mensagens"))
    }

    @Test func conditionSendsReachExactlyTheMatchingDevices() async throws {
        let f = try await Fixture()
        // Devices × subscriptions.
        let subscriptions: [Set<String>] = [[], ["a"], ["a", "b"], ["a", "c"], ["b", "c"], ["a", "b", "c"], ["b"]]
        let devices = try await f.daemon.registerDevices(f.keys, count: subscriptions.count)
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
            let stream = try f.daemon.openStream(secret: device.secret)
            defer { stream.stop() }
            try await stream.waitFor("the end marker") { $0.contains(#""row":"end""#) }
            try await Task.sleep(for: .milliseconds(100))
            let rows = Set(parseEvents(stream.text).compactMap { try? jsonObject($0.data)["row"] as? String })
            let expected = Set(table.indices.filter { table[$0].expected.contains(deviceIndex) }.map(String.init))
            #expect(rows == expected.union(["end"]), "device \(deviceIndex) with \(subscriptions[deviceIndex])")
        }
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
            let answer = try await f.daemon.send(#"{"condition": "\#(condition)", "data": {"k": "v"}}"#, serverKey: f.keys.serverKey)
            #expect(answer.status == 400, "\(condition): \(answer.body)")
            #expect(answer.body.contains("InvalidParameters"), "\(condition): \(answer.body)")
        }
        let badTopic = try await f.daemon.send(#"{"to": "/topics/bad name"}"#, serverKey: f.keys.serverKey)
        #expect(badTopic.status == 400)
        #expect(badTopic.body.contains("InvalidParameters"))
        // A topic send without a key is refused like any send.
        #expect(try await f.daemon.send(#"{"to": "/topics/x"}"#, serverKey: "AAAAwrong").status == 401)
    }

    @Test func aDeviceSubscribedAfterTheSendDoesNotGetIt() async throws {
        let f = try await Fixture()
        let early = try await f.daemon.registerDevice(f.keys)
        let late = try await f.daemon.registerDevice(f.keys)
        #expect(try await f.batch(true, to: "late", tokens: [early.token]).allSatisfy(\.isEmpty))
        _ = try await f.sendToTopic(#"{"to": "/topics/late", "data": {"n": "before"}}"#)
        // Subscribed right after the answer: possibly while the message is still being expanded.
        #expect(try await f.call("POST", "/iid/v1/\(late.token)/rel/topics/late").status == 200)
        let earlyStream = try f.daemon.openStream(secret: early.secret)
        defer { earlyStream.stop() }
        try await earlyStream.waitFor("the topic message") { $0.contains("before") }
        let marker = try await f.sendMarker(to: late.token)
        let lateStream = try f.daemon.openStream(secret: late.secret)
        defer { lateStream.stop() }
        let text = try await lateStream.waitFor("the marker") { parseEvents($0).contains { $0.id == marker } }
        #expect(!text.contains("before"))
        // A later send reaches it.
        _ = try await f.sendToTopic(#"{"to": "/topics/late", "data": {"n": "after"}}"#)
        try await lateStream.waitFor("the later topic message") { $0.contains("after") }
    }

    @Test func theDeviceSubscribesItself() async throws {
        let f = try await Fixture()
        let device = try await f.daemon.registerDevice(f.keys)
        #expect(try await f.deviceCall("POST", "/v1/topics/weather", secret: device.secret).status == 200)
        #expect(try await f.deviceCall("POST", "/v1/topics/%2Ftopics%2Frain", secret: device.secret).status < 500)
        #expect(try await f.deviceCall("POST", "/v1/topics/bad!name", secret: device.secret).status == 400)
        #expect(try await f.deviceCall("POST", "/v1/topics/weather", secret: "wrong").status == 401)
        #expect(try await f.topics(of: device.token)["weather"] != nil)
        let stream = try f.daemon.openStream(secret: device.secret)
        defer { stream.stop() }
        _ = try await f.sendToTopic(#"{"to": "/topics/weather", "data": {"n": "sunny"}}"#)
        let text = try await stream.waitFor("the topic message") { $0.contains("sunny") }
        #expect(try jsonObject(try #require(parseEvents(text).last).data)["from"] as? String == "/topics/weather")
        #expect(try await f.deviceCall("DELETE", "/v1/topics/weather", secret: device.secret).status == 200)
        #expect(try await f.topics(of: device.token)["weather"] == nil)
        _ = try await f.sendToTopic(#"{"to": "/topics/weather", "data": {"n": "rainy"}}"#)
        let marker = try await f.sendMarker(to: device.token)
        let after = try await stream.waitFor("the marker") { parseEvents($0).contains { $0.id == marker } }
        #expect(!after.contains("rainy"))
    }

    @Test func unsubscribeUnregisterAndProjectDeletionCleanSubscriptions() async throws {
        let f = try await Fixture()
        let unsubscribed = try await f.daemon.registerDevice(f.keys)
        let unregistered = try await f.daemon.registerDevice(f.keys)
        let kept = try await f.daemon.registerDevice(f.keys)
        let tokens = [unsubscribed.token, unregistered.token, kept.token]
        #expect(try await f.batch(true, to: "news", tokens: tokens).allSatisfy(\.isEmpty))

        #expect(try await f.call("DELETE", "/iid/v1/\(unsubscribed.token)/rel/topics/news").status == 200)
        let deleted = try await f.deviceCall("DELETE", "/v1/register", secret: unregistered.secret)
        #expect(deleted.status == 200)
        #expect(try await f.topics(of: unsubscribed.token).isEmpty)
        #expect(try await f.call("GET", "/iid/info/\(unregistered.token)?details=true").status == 404)

        _ = try await f.sendToTopic(#"{"to": "/topics/news", "data": {"n": "later"}}"#)
        let keptStream = try f.daemon.openStream(secret: kept.secret)
        defer { keptStream.stop() }
        try await keptStream.waitFor("the topic message") { $0.contains("later") }
        let marker = try await f.sendMarker(to: unsubscribed.token)
        let stream = try f.daemon.openStream(secret: unsubscribed.secret)
        defer { stream.stop() }
        let text = try await stream.waitFor("the marker") { parseEvents($0).contains { $0.id == marker } }
        #expect(!text.contains("later"))

        // Project deletion: the project's subscriptions go with it; another project's topic of the same name is
        // untouched.
        let other = try await f.daemon.createProject("gone")
        let goner = try await f.daemon.registerDevice(other)
        let answer = try await f.call(
            "POST", "/iid/v1:batchAdd", body: #"{"to": "news", "registration_tokens": ["\#(goner.token)"]}"#,
            key: other.serverKey)
        #expect(answer.status == 200)
        let delete = try await Daemon.cli(["project", "delete", "gone", "--data-dir", f.daemon.dataDir.path])
        #expect(delete.status == 0, "\(delete.stderr)")
        // The daemon sees a deletion made by the CLI within its auth cache's recheck interval (250 ms).
        var status = 0
        for _ in 0..<100 {
            status = try await f.call("GET", "/iid/info/\(goner.token)?details=true", key: other.serverKey).status
            if status == 401 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(status == 401)
        #expect(try await f.call("GET", "/iid/info/\(goner.token)?details=true").status == 404)
        #expect(try await f.daemon.send(#"{"to": "/topics/news"}"#, serverKey: other.serverKey).status == 401)
        #expect(Set(try await f.topics(of: kept.token).keys) == ["news"])
        // Only `kept`'s subscription is left in the store.
        let count = try await run("python3", [
            "-c", "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM subscriptions').fetchone()[0])",
            f.daemon.dataDir.appendingPathComponent("pushrelay.sqlite").path,
        ])
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "\(count.stderr)")
    }
}
