import Foundation
import TestSupport
import Testing

/// FCM's device groups against the real daemon: a back end manages a group with curl (`/fcm/notification`, server
/// key and `project_id`), sends the seed scenario to the group's key, and every member receives it — one through
/// `pushrelay listen`, one through a curl stream — while a device outside the group does not; the errors FCM answers,
/// each changing nothing; a member that unregisters leaves the group; the group outlives a restart; and an FCM HTTP v1
/// sender made of Google's `google-auth` manages the group with its access token and sends to it by
/// `message.token`. The rules in detail are tested in process: `PushRelayServerTests.DeviceGroupRouteTests`.
@Suite(.serialized, .tags(.endToEnd), .hangGuard) struct DeviceGroupTests {
    /// A started daemon with one project.
    struct Fixture {
        let daemon: Daemon
        let keys: ProjectKeys

        init() async throws {
            daemon = try Daemon()
            try await daemon.start()
            keys = try await daemon.createProject()
        }

        /// curl on `/fcm/notification` with FCM's headers (the project's server key and sender id unless given).
        func notification(
            _ method: String, query: String = "", body: String? = nil, serverKey: String? = nil, projectID: String? = nil
        ) async throws -> (status: Int, json: [String: Any], body: String) {
            var args = [
                "-sS", "-X", method, "\(daemon.baseURL)/fcm/notification\(query)", "-w", "\n%{http_code}",
                "-H", "Authorization: key=\(serverKey ?? keys.serverKey)", "-H", "project_id: \(projectID ?? keys.senderID)",
            ]
            if body != nil { args += ["-H", "Content-Type: application/json", "--data-binary", "@-"] }
            let result = try await run("curl", args, stdin: body)
            guard result.status == 0 else { throw DaemonError(message: "curl failed: \(result.stderr)") }
            var lines = result.stdout.components(separatedBy: "\n")
            let status = Int(lines.removeLast()) ?? 0
            let text = lines.joined(separator: "\n")
            return (status, (try? jsonObject(text)) ?? [:], text)
        }

        /// `{"operation": …, "notification_key_name": …, "notification_key": …, "registration_ids": […]}`.
        static func operation(_ operation: String, name: String? = nil, key: String? = nil, tokens: [String]) -> String {
            var fields = [#""operation": "\#(operation)""#]
            if let name { fields.append(#""notification_key_name": "\#(name)""#) }
            if let key { fields.append(#""notification_key": "\#(key)""#) }
            fields.append(#""registration_ids": [\#(tokens.map { "\"\($0)\"" }.joined(separator: ", "))]"#)
            return "{" + fields.joined(separator: ", ") + "}"
        }

        /// The key `GET /fcm/notification?notification_key_name=…` answers, or nil with the error it answers.
        func key(of name: String) async throws -> String? {
            let answer = try await notification("GET", query: "?notification_key_name=\(name)")
            return answer.json["notification_key"] as? String
        }
    }

    @Test("a back end creates a group with curl and the scenario sent to its key reaches both members, not a third device")
    func scenarioReachesTheGroup() async throws {
        let f = try await Fixture()
        let members = try await f.daemon.registerDevices(f.keys, count: 2)
        let bystander = try await f.daemon.registerDevice(f.keys)
        let created = try await f.notification(
            "POST", body: Fixture.operation("create", name: "appUser-Matilde", tokens: members.map(\.token)))
        #expect(created.status == 200, "\(created.body)")
        let key = try #require(created.json["notification_key"] as? String, "\(created.body)")
        #expect(key.hasPrefix("APA91b") && !key.contains(":"), "\(key)")
        #expect(try await f.key(of: "appUser-Matilde") == key)

        let listener = try StreamingProcess(Daemon.binary, [
            "listen", "--server", f.daemon.baseURL, "--secret", members[0].secret, "--count", "1", "--timeout", "60",
        ])
        defer { listener.stop() }
        let stream = try await f.daemon.openConnectedStream(secret: members[1].secret)
        defer { stream.stop() }
        let quiet = try await f.daemon.openConnectedStream(secret: bystander.secret)
        defer { quiet.stop() }

        let sent = try await f.daemon.send(
            scenarioBody.replacingOccurrences(of: "\"TOKEN\"", with: "\"\(key)\""), serverKey: f.keys.serverKey)
        #expect(sent.status == 200 && sent.body == #"{"success":2,"failure":0}"#, "\(sent.body)")
        // pushrelay listen prints the course's screen (the id is the member's own copy's).
        #expect(await listener.waitForExit() == 0)
        let screen = listener.text.components(separatedBy: "\n")
        #expect(screen.first?.hasPrefix("Message Id: ") == true, "\(listener.text)")
        #expect(Array(screen.dropFirst()) == Array(ListenCommandTests.screen("x").components(separatedBy: "\n").dropFirst()))
        let text = try await stream.waitFor("the scenario") { text in
            parseEvents(text).contains { $0.data.contains("Provedor de Mensagens") }
        }
        let event = try #require(parseEvents(text).first { $0.data.contains("Provedor de Mensagens") })
        try expectScenarioEnvelope(event.data, messageID: try #require(event.id), senderID: f.keys.senderID)
        let marker = try messageID(ofSendResponse: try await f.daemon.send(
            #"{"to": "\#(bystander.token)", "data": {"marker": "1"}}"#, serverKey: f.keys.serverKey).body)
        let seen = try await quiet.waitFor("the marker") { parseEvents($0).contains { $0.id == marker } }
        #expect(!seen.contains("Provedor de Mensagens"))
    }

    @Test("add, remove, FCM's errors (each changing nothing), an unregistered member leaving, a restart")
    func managementAndErrors() async throws {
        let f = try await Fixture()
        let devices = try await f.daemon.registerDevices(f.keys, count: 3)
        let other = try await f.daemon.createProject("other")
        let foreign = try await f.daemon.registerDevice(other)
        let create = try await f.notification(
            "POST", body: Fixture.operation("create", name: "u1", tokens: [devices[0].token]))
        let key = try #require(create.json["notification_key"] as? String, "\(create.body)")
        // Another key of the same shape (its last character changed): no group's.
        let otherKey = String(key.dropLast()) + (key.hasSuffix("x") ? "y" : "x")
        let added = try await f.notification(
            "POST", body: Fixture.operation("add", name: "u1", key: key, tokens: [devices[1].token, devices[2].token]))
        #expect(added.status == 200 && added.json["notification_key"] as? String == key, "\(added.body)")

        let refused: [(body: String, serverKey: String?, projectID: String?, status: Int, error: String)] = [
            (Fixture.operation("create", name: "u1", tokens: [devices[0].token]), nil, nil, 400,
             "notification_key already exists"),
            (Fixture.operation("add", key: key, tokens: [foreign.token]), nil, nil, 400,
             "registration id of another project (MismatchSenderId): \(foreign.token)"),
            (Fixture.operation("remove", key: otherKey, tokens: [devices[0].token]), nil, nil, 400,
             "notification_key not found"),
            (Fixture.operation("create", name: "u2", tokens: []), nil, nil, 400, #""registration_ids" field cannot be empty"#),
            (Fixture.operation("create", name: "u2", tokens: ["not-a-token"]), nil, nil, 400, "no valid registration ids"),
            (Fixture.operation("create", name: "u2", tokens: [devices[0].token]), "wrong", nil, 401, "UNAUTHENTICATED"),
            (Fixture.operation("create", name: "u2", tokens: [devices[0].token]), nil, other.senderID, 400, "INVALID_PROJECT_ID"),
            ("{\"operation\": ", nil, nil, 400, "JSON_PARSING_ERROR: Unexpected end of input at position 14."),
        ]
        for (body, serverKey, projectID, status, error) in refused {
            let answer = try await f.notification("POST", body: body, serverKey: serverKey, projectID: projectID)
            #expect(answer.status == status && answer.json["error"] as? String == error, "\(body.prefix(80)): \(answer.body)")
        }
        // Nothing of it changed the group or made another one.
        #expect(try await f.key(of: "u2") == nil)
        let all = try await f.daemon.send(#"{"to": "\#(key)", "dry_run": true}"#, serverKey: f.keys.serverKey)
        #expect(all.body == #"{"success":3,"failure":0}"#, "\(all.body)")

        // A member that unregisters leaves the group; one removed leaves it too.
        let unregistered = try await run("curl", [
            "-sS", "-X", "DELETE", "\(f.daemon.baseURL)/v1/register", "-H", "Authorization: Bearer \(devices[2].secret)",
            "-w", "%{http_code}", "-o", "/dev/null",
        ])
        #expect(unregistered.stdout == "200")
        let removed = try await f.notification("POST", body: Fixture.operation("remove", key: key, tokens: [devices[1].token]))
        #expect(removed.status == 200, "\(removed.body)")
        let one = try await f.daemon.send(#"{"to": "\#(key)", "data": {"n": "1"}}"#, serverKey: f.keys.serverKey)
        #expect(one.body == #"{"success":1,"failure":0}"#, "\(one.body)")
        // pushrelay send takes the key as --to, as a back end's script would.
        let cli = try await Daemon.cli([
            "send", "--server", f.daemon.baseURL, "--server-key", f.keys.serverKey, "--to", key, "--data", "n=cli",
        ])
        #expect(cli.status == 0 && cli.stdout == "{\"success\":1,\"failure\":0}\n", "\(cli.stdout) \(cli.stderr)")

        // The group is in the store: a restarted daemon knows its name and key.
        #expect(try await f.daemon.terminate() == 0)
        try await f.daemon.start()
        #expect(try await f.key(of: "u1") == key)
        let stream = try f.daemon.openStream(secret: devices[0].secret)
        defer { stream.stop() }
        try await stream.waitFor("the messages sent to the group before the restart") { text in
            let events = parseEvents(text)
            return events.filter { $0.data.contains(#""n":"1""#) }.count == 1
                && events.contains { $0.data.contains(#""n":"cli""#) }
        }

        // The last member leaves: the group is deleted, and its key answers NotRegistered.
        let last = try await f.notification("POST", body: Fixture.operation("remove", key: key, tokens: [devices[0].token]))
        #expect(last.status == 200 && last.json["notification_key"] as? String == key, "\(last.body)")
        #expect(try await f.key(of: "u1") == nil)
        let gone = try await f.daemon.send(#"{"to": "\#(key)", "data": {"n": "2"}}"#, serverKey: f.keys.serverKey)
        let results = try jsonObject(gone.body)["results"] as? [[String: Any]]
        #expect(results?.first?["error"] as? String == "NotRegistered", "\(gone.body)")
        #expect(try await f.daemon.query("SELECT count(*) FROM device_groups") == "0")
        _ = try await f.daemon.terminate()
    }

    @Test("google-auth: a v1 sender manages the group with its access token and sends to it by message.token")
    func v1Sender() async throws {
        let f = try await Fixture()
        let members = try await f.daemon.registerDevices(f.keys, count: 2)
        let file = try await f.daemon.serviceAccount()
        let headers = ["access_token_auth": "true", "project_id": f.keys.senderID]
        let created = try await f.daemon.v1Requests(file: file, [
            V1Request(path: "/fcm/notification", json: [
                "operation": "create", "notification_key_name": "v1-user", "registration_ids": members.map(\.token),
            ] as [String: Any], headers: headers),
        ])
        let answer = try #require(created.responses.first)
        #expect(answer.status == 200, "\(answer.body)")
        let key = try #require(answer.json["notification_key"] as? String)

        let streams = try members.map { try f.daemon.openStream(secret: $0.secret) }
        defer { streams.forEach { $0.stop() } }
        let sent = try await f.daemon.v1Requests(file: file, [
            V1Request(path: "/v1/projects/shop/messages:send", json: v1ScenarioMessage(token: key)),
            V1Request(method: "GET", path: "/fcm/notification?notification_key_name=v1-user", headers: headers),
        ])
        #expect(sent.responses[0].status == 200, "\(sent.responses[0].body)")
        let name = try #require(sent.responses[0].json["name"] as? String, "\(sent.responses[0].body)")
        #expect(sent.responses[1].json["notification_key"] as? String == key, "\(sent.responses[1].body)")
        var ids: [String] = []
        for stream in streams {
            let text = try await stream.waitFor("the v1 message") { text in
                parseEvents(text).contains { $0.data.contains("Provedor de Mensagens") }
            }
            ids += parseEvents(text).filter { $0.data.contains("Provedor de Mensagens") }.compactMap(\.id)
        }
        #expect(ids.count == 2 && ids.contains(String(name.dropFirst("projects/shop/messages/".count))), "\(name) \(ids)")
        _ = try await f.daemon.terminate()
    }
}
