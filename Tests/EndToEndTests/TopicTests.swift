import Foundation
import TestSupport
import Testing

/// Topics end to end, against the real daemon with curl: the seed scenario sent to a topic reaches three listening
/// streams, and subscriptions are cleaned by unsubscribe, unregister and a project deleted by the CLI while the daemon
/// runs. The Instance ID routes and the topic and condition rules are tested in process:
/// `PushRelayServerTests.TopicRouteTests`.
@Suite(.serialized, .tags(.endToEnd), .hangGuard) struct TopicTests {
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

    @Test func scenarioSentToATopicReachesThreeListeners() async throws {
        let f = try await Fixture()
        let listeners = try await f.daemon.registerDevices(f.keys, count: 3)
        let bystander = try await f.daemon.registerDevice(f.keys)
        #expect(try await f.batch(true, to: "/topics/pedidos", tokens: listeners.map(\.token)).allSatisfy(\.isEmpty))
        // The streams are open before the send.
        var streams: [StreamingProcess] = []
        defer { streams.forEach { $0.stop() } }
        for listener in listeners { streams.append(try await f.daemon.openConnectedStream(secret: listener.secret)) }
        let quiet = try await f.daemon.openConnectedStream(secret: bystander.secret)
        defer { quiet.stop() }

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

    /// `restricted_package_name` on a topic or condition send (legacy, and v1's `android.restricted_package_name`):
    /// the answer is the message id as ever, and only the subscribers whose app is that name get a copy.
    @Test func restrictedPackageNameReachesOnlyThatApp() async throws {
        let f = try await Fixture()
        let x = try await f.daemon.registerDevice(f.keys, app: "com.x", platform: "android")
        let y = try await f.daemon.registerDevice(f.keys, app: "com.y", platform: "android")
        for topic in ["gone", "other"] {
            #expect(try await f.batch(true, to: topic, tokens: [x.token, y.token]).allSatisfy(\.isEmpty))
        }
        let condition = "'gone' in topics && 'other' in topics"
        // First the sends nobody may get: the topic messages are expanded oldest first, so once each device has
        // the later copies it is meant to get, these have been expanded too.
        _ = try await f.sendToTopic(#"{"to": "/topics/gone", "restricted_package_name": "com.zzz", "data": {"k": "rpn"}}"#)
        _ = try await f.sendToTopic(
            #"{"condition": "\#(condition)", "restricted_package_name": "com.zzz", "data": {"k": "rpn-condition"}}"#)
        _ = try await f.sendToTopic(#"{"to": "/topics/gone", "restricted_package_name": "com.x", "data": {"k": "for-x"}}"#)
        _ = try await f.sendToTopic(
            #"{"condition": "\#(condition)", "restricted_package_name": "com.y", "data": {"k": "for-y"}}"#)
        let file = try await f.daemon.serviceAccount()
        let v1 = try await f.daemon.v1Requests(file: file, [
            V1Request(path: "/v1/projects/shop/messages:send", json: ["message": [
                "topic": "gone", "android": ["restricted_package_name": "com.x"], "data": ["k": "v1-for-x"],
            ]]),
            V1Request(path: "/v1/projects/shop/messages:send", json: ["message": [
                "condition": condition, "android": ["restricted_package_name": "com.y"], "data": ["k": "v1-for-y"],
            ]]),
        ])
        for answer in v1.responses {
            #expect(answer.status == 200 && (answer.json["name"] as? String)?.hasPrefix("projects/shop/messages/") == true,
                    "\(answer.body)")
        }
        for (device, mine, theirs) in [(x, ["for-x", "v1-for-x"], ["for-y", "v1-for-y"]),
                                       (y, ["for-y", "v1-for-y"], ["for-x", "v1-for-x"])] {
            let stream = try f.daemon.openStream(secret: device.secret)
            defer { stream.stop() }
            let text = try await stream.waitFor("the copies for \(device.token)") { text in
                let values = Set(parseEvents(text).compactMap { try? jsonObject($0.data)["k"] as? String })
                return mine.allSatisfy(values.contains)
            }
            let values = Set(parseEvents(text).compactMap { try? jsonObject($0.data)["k"] as? String })
            #expect(values == Set(mine), "\(values)")
            #expect(values.isDisjoint(with: theirs + ["rpn", "rpn-condition"]))
        }
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
        let delete = try await Daemon.cli(["project", "delete", "gone", "--data-dir", f.daemon.dataDir.path] + f.daemon.storeArguments)
        #expect(delete.status == 0, "\(delete.stderr)")
        // The daemon sees a deletion made by the CLI within its auth cache's recheck interval (250 ms).
        let status = try await poll(every: .milliseconds(50), for: .seconds(5)) {
            try await f.call("GET", "/iid/info/\(goner.token)?details=true", key: other.serverKey).status
        } until: { $0 == 401 }
        #expect(status == 401)
        #expect(try await f.call("GET", "/iid/info/\(goner.token)?details=true").status == 404)
        #expect(try await f.daemon.send(#"{"to": "/topics/news"}"#, serverKey: other.serverKey).status == 401)
        #expect(Set(try await f.topics(of: kept.token).keys) == ["news"])
        // Only `kept`'s subscription is left in the store.
        let count = try await f.daemon.query("SELECT count(*) FROM subscriptions")
        #expect(count == "1", "\(count)")
    }
}
