import Foundation
import TestSupport
import Testing

/// FCM HTTP v1 end to end: service-account files from the CLI, Google's `google-auth` as the OAuth 2 client, curl,
/// and devices listening on the real daemon.
@Suite(.serialized, .tags(.endToEnd), .hangGuard) struct FCMv1Tests {
    static let firebaseScope = "https://www.googleapis.com/auth/firebase.messaging"

    struct Fixture {
        var daemon: Daemon
        var keys: ProjectKeys
        var device: DeviceKeys
        var file: String
    }

    static func fixture(arguments: [String] = []) async throws -> Fixture {
        let daemon = try Daemon(arguments: arguments)
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        return Fixture(daemon: daemon, keys: keys, device: device, file: try await daemon.serviceAccount())
    }

    @Test("google-auth gets a token from /token and sends the scenario through v1 to pushrelay listen")
    func scenarioThroughGoogleAuth() async throws {
        let f = try await Self.fixture()
        let info = try jsonObject(try String(contentsOfFile: f.file, encoding: .utf8))
        #expect(info["type"] as? String == "service_account")
        #expect(info["project_id"] as? String == "shop")
        #expect(info["token_uri"] as? String == "\(f.daemon.baseURL)/token")
        #expect((info["private_key"] as? String)?.hasPrefix("-----BEGIN PRIVATE KEY-----\n") == true)
        for field in ["private_key_id", "client_email", "client_id", "auth_uri", "auth_provider_x509_cert_url",
                      "client_x509_cert_url"] {
            #expect(info[field] is String, "\(field)")
        }
        // The store has the public key only.
        let database = try await f.daemon.storeContents()
        let privateBody = (info["private_key"] as? String ?? "").split(separator: "\n")[1]
        #expect(database.range(of: Data(privateBody.utf8)) == nil)

        let listener = try StreamingProcess(Daemon.binary, [
            "listen", "--server", f.daemon.baseURL, "--secret", f.device.secret, "--count", "1", "--timeout", "60",
        ])
        defer { listener.stop() }
        let sent = try await f.daemon.v1Requests(
            file: f.file, [V1Request(path: "/v1/projects/shop/messages:send", json: v1ScenarioMessage(token: f.device.token))])
        #expect(sent.token.hasPrefix("prat."))
        let answer = try #require(sent.responses.first)
        #expect(answer.status == 200, "\(answer.body)")
        let name = try #require(answer.json["name"] as? String)
        #expect(name.hasPrefix("projects/shop/messages/"))
        let id = String(name.dropFirst("projects/shop/messages/".count))
        #expect(await listener.waitForExit() == 0)
        #expect(listener.text == ListenCommandTests.screen(id))
        try await f.daemon.terminate()
    }

    @Test("every v1 error appears where it should, in Google's form")
    func errors() async throws {
        let f = try await Self.fixture()
        let other = try await f.daemon.createProject("other")
        let foreign = try await f.daemon.registerDevice(other)
        let unregistered = "eeDh2Sd5HknG1zdC1w1UBD:APA91b" + String(repeating: "x", count: 110)
        let send = "/v1/projects/shop/messages:send"
        let out = try await f.daemon.v1Requests(file: f.file, [
            V1Request(path: send, json: ["message": ["token": unregistered]]),
            V1Request(path: send, json: ["message": ["token": foreign.token]]),
            V1Request(path: send, json: ["message": ["token": f.device.token, "data": ["n": 3]]]),
            V1Request(path: send, json: ["message": ["token": f.device.token, "topic": "news"]]),
            V1Request(path: send, json: ["message": ["token": f.device.token, "notification": ["subtitle": "x"]]]),
            V1Request(path: send, json: ["message": ["token": f.device.token, "data": ["from": "x"]]]),
            V1Request(path: send, json: ["message": ["token": f.device.token, "android": ["ttl": "3 days"]]]),
            V1Request(path: "/v1/projects/other/messages:send", json: ["message": ["token": foreign.token]]),
            V1Request(path: "/v1/projects/shop/messages:sendAll", json: [:]),
            V1Request(path: "/v1/projects/shop/nothing/here", json: [:]),
            V1Request(method: "GET", path: "/v1/projects/shop/messages:send"),
            V1Request(path: send, json: ["message": ["token": f.device.token, "data": ["pad": String(repeating: "x", count: 600_000)]]]),
        ])
        let r = out.responses
        #expect(r[0].status == 404 && r[0].status_ == "NOT_FOUND" && r[0].errorCode == "UNREGISTERED", "\(r[0].body)")
        #expect(r[1].status == 403 && r[1].status_ == "PERMISSION_DENIED" && r[1].errorCode == "SENDER_ID_MISMATCH")
        #expect(r[2].status == 400 && r[2].status_ == "INVALID_ARGUMENT", "\(r[2].body)")
        #expect(r[2].body.contains("Invalid value at 'message.data[0].value' (TYPE_STRING), 3"))
        #expect(r[3].status == 400 && r[3].body.contains("oneof field 'target' is already set"), "\(r[3].body)")
        #expect(r[4].status == 400 && r[4].body.contains(#"Unknown name \"subtitle\" at 'message.notification'"#))
        #expect(r[5].status == 400 && r[5].errorCode == "INVALID_ARGUMENT")
        #expect(r[6].status == 400 && r[6].body.contains("Illegal duration format"))
        #expect(r[7].status == 403 && r[7].status_ == "PERMISSION_DENIED" && r[7].errorCode == nil)
        for response in r[8...10] {
            // Never a 404 (read as UNREGISTERED by v1 libraries): Google's error form, UNIMPLEMENTED.
            #expect(response.status == 501 && response.status_ == "UNIMPLEMENTED", "\(response.body)")
        }
        // A body over max_send_body_size (512 KiB by default), refused by the transport before the route: Google's form too.
        #expect(r[11].status == 413 && r[11].status_ == "INVALID_ARGUMENT", "\(r[11].body)")

        // Without a token, with a made-up one, and with a legacy server key: 401 UNAUTHENTICATED, no FcmError.
        for header in [[], ["-H", "Authorization: Bearer prat.madeup"], ["-H", "Authorization: key=\(f.keys.serverKey)"]] {
            let result = try await run("curl", ["-sS", "-X", "POST", "\(f.daemon.baseURL)\(send)", "-w", "\n%{http_code}",
                                                "-H", "Content-Type: application/json", "--data-binary", "{}"] + header)
            #expect(result.stdout.hasSuffix("\n401"), "\(result.stdout)")
            #expect(result.stdout.contains(#""status":"UNAUTHENTICATED""#))
            #expect(!result.stdout.contains("FcmError"))
        }
        try await f.daemon.terminate()
    }

    @Test("max_send_body_size bounds the v1 send's body as it bounds the legacy one's")
    func sendBodyLimitSetting() async throws {
        // Raised past the default (512 KiB): a 600,000-byte body is read and judged (a message over 4,096 bytes),
        // one past the setting is refused by the transport. (The handler read at most 256 KiB whatever the setting.)
        let f = try await Self.fixture(arguments: ["--max-send-body-size", "1MiB"])
        let send = "/v1/projects/shop/messages:send"
        let out = try await f.daemon.v1Requests(file: f.file, [
            V1Request(path: send, json: ["message": ["token": f.device.token, "data": ["pad": String(repeating: "x", count: 600_000)]]]),
            V1Request(path: send, json: ["message": ["token": f.device.token, "data": ["pad": String(repeating: "x", count: 1_100_000)]]]),
        ])
        let r = out.responses
        #expect(r[0].status == 400 && r[0].errorCode == "INVALID_ARGUMENT", "\(r[0].body)")
        #expect(r[0].body.contains("4096"), "\(r[0].body)")
        #expect(r[1].status == 413 && r[1].status_ == "INVALID_ARGUMENT", "\(r[1].body)")
        try await f.daemon.terminate()
    }

    @Test("/token refuses expired, tampered, wrongly addressed and wrongly scoped JWTs, and revoked keys")
    func tokenEndpointRefusals() async throws {
        let f = try await Self.fixture()
        let now = Int(Date().timeIntervalSince1970)
        let ok = try await f.daemon.googleAuth(["file": f.file, "jwt": [String: Any]()])
        #expect(ok["token_status"] as? Int == 200, "\(ok)")
        let body = try #require(ok["token_body"] as? [String: Any])
        #expect(body["token_type"] as? String == "Bearer")
        #expect(body["expires_in"] as? Int == 3599)
        // A signer that knows only the private key sends no kid: the account's keys are tried.
        let noKid = try await f.daemon.googleAuth(["file": f.file, "jwt": [String: Any](), "no_kid": true])
        #expect(noKid["token_status"] as? Int == 200, "\(noKid)")
        let strangerIssuer = try await f.daemon.googleAuth(
            ["file": f.file, "jwt": ["iss": "someone@example.com"], "no_kid": true])
        #expect(strangerIssuer["token_status"] as? Int == 400, "\(strangerIssuer)")
        for (what, claims, tamper, error) in [
            ("expired", ["iat": now - 7200, "exp": now - 3600] as [String: Any], false, "invalid_grant"),
            ("tampered", [:], true, "invalid_grant"),
            ("wrong audience", ["aud": "https://example.com/token"], false, "invalid_grant"),
            ("wrong scope", ["scope": "https://www.googleapis.com/auth/devstorage.read_only"], false, "invalid_scope"),
            ("too long", ["exp": now + 7200], false, "invalid_grant"),
        ] {
            let out = try await f.daemon.googleAuth(["file": f.file, "jwt": claims, "tamper": tamper])
            #expect(out["token_status"] as? Int == 400, "\(what): \(out)")
            #expect((out["token_body"] as? [String: Any])?["error"] as? String == error, "\(what): \(out)")
        }
        // google-auth itself with a scope that does not allow sending.
        let scoped = try await f.daemon.googleAuth(["file": f.file, "scopes": ["https://www.googleapis.com/auth/devstorage.read_only"]])
        #expect((scoped["refresh_error"] as? String)?.contains("invalid_scope") == true, "\(scoped)")
        // Wrong grant type and missing assertion.
        for (form, error) in [("grant_type=password", "unsupported_grant_type"),
                              ("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer", "invalid_request")] {
            let result = try await run("curl", ["-sS", "-X", "POST", "\(f.daemon.baseURL)/token", "-d", form, "-w", "\n%{http_code}"])
            #expect(result.stdout.hasSuffix("\n400") && result.stdout.contains(#""error":"\#(error)""#), "\(result.stdout)")
        }
        // A form over the endpoint's 64 KiB: 413 in OAuth's error form (it was plain text).
        let huge = try await run("curl", [
            "-sS", "-X", "POST", "\(f.daemon.baseURL)/token", "--data-binary", "@-", "-w", "\n%{http_code}",
        ], stdin: "grant_type=x&assertion=" + String(repeating: "a", count: 70_000))
        #expect(huge.stdout.hasSuffix("\n413") && huge.stdout.contains(#""error":"invalid_request""#), "\(huge.stdout)")

        // Revoking the key ends its access tokens (the daemon's cache follows within its recheck interval) and
        // refuses new grants.
        let (token, used) = try await f.daemon.v1Requests(
            file: f.file, [V1Request(path: "/v1/projects/shop/messages:send", json: [:])])
        #expect(used.first?.status == 400)  // authenticated (and cached), then refused for the missing message
        let info = try jsonObject(try String(contentsOfFile: f.file, encoding: .utf8))
        let keyID = try #require(info["private_key_id"] as? String)
        let listed = try await Daemon.cli(["project", "service-account-keys", "shop", "--data-dir", f.daemon.dataDir.path] + f.daemon.storeArguments)
        #expect(listed.stdout.contains(keyID) && listed.stdout.contains("valid"))
        let revoked = try await Daemon.cli(["project", "revoke-service-account-key", "shop", keyID, "--data-dir", f.daemon.dataDir.path] + f.daemon.storeArguments)
        #expect(revoked.status == 0)
        let after = try await poll(every: .milliseconds(50), for: .seconds(20)) {
            try await run("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                                   "\(f.daemon.baseURL)/v1/projects/shop/messages:send",
                                   "-H", "Authorization: Bearer \(token)", "--data-binary", "{}"]).stdout
        } until: { $0 == "401" }
        #expect(after == "401")
        let regrant = try await f.daemon.googleAuth(["file": f.file, "jwt": [String: Any]()])
        #expect(regrant["token_status"] as? Int == 400)
        try await f.daemon.terminate()
    }

    @Test("curl with a hand-built v1 body; validate_only stores nothing; the 4096-byte limit; legacy and v1 in order")
    func curlValidateOnlyLimitAndOrder() async throws {
        let f = try await Self.fixture()
        let (token, _) = try await f.daemon.v1Requests(file: f.file, [])
        func curlV1(_ body: String) async throws -> (status: Int, body: String) {
            let result = try await run("curl", [
                "-sS", "--http2-prior-knowledge", "-X", "POST", "\(f.daemon.baseURL)/v1/projects/shop/messages:send",
                "-H", "Authorization: Bearer \(token)", "-H", "Content-Type: application/json", "--data-binary", "@-",
                "-w", "\n%{http_code}",
            ], stdin: body)
            var lines = result.stdout.components(separatedBy: "\n")
            let status = Int(lines.removeLast()) ?? 0
            return (status, lines.joined(separator: "\n"))
        }
        func id(_ answer: (status: Int, body: String)) throws -> String {
            let name = try #require(try jsonObject(answer.body)["name"] as? String)
            return String(name.split(separator: "/").last ?? "")
        }
        let stream = try f.daemon.openStream(secret: f.device.secret)
        defer { stream.stop() }

        let dry = try await curlV1(#"{"validate_only": true, "message": {"token": "\#(f.device.token)", "data": {"k": "v"}}}"#)
        #expect(dry.status == 200 && dry.body.contains("projects/shop/messages/fake_message_id"), "\(dry.body)")

        let limit = "{\"message\": {\"token\": \"\(f.device.token)\", \"data\": {\"k\": \"\(String(repeating: "v", count: 4095))\"}}}"
        let tooBig = "{\"message\": {\"token\": \"\(f.device.token)\", \"data\": {\"k\": \"\(String(repeating: "v", count: 4096))\"}}}"
        let big = try await curlV1(tooBig)
        #expect(big.status == 400 && big.body.contains("too big"), "\(big.body)")

        // Legacy, v1, legacy, v1 (at the limit): one stream, in this order, nothing before them.
        var ids: [String] = []
        ids.append(try messageID(ofSendResponse: try await f.daemon.send(
            #"{"to": "\#(f.device.token)", "data": {"n": "1"}}"#, serverKey: f.keys.serverKey).body))
        ids.append(try id(try await curlV1(#"{"message": {"token": "\#(f.device.token)", "data": {"n": "2"}}}"#)))
        ids.append(try messageID(ofSendResponse: try await f.daemon.send(
            #"{"to": "\#(f.device.token)", "data": {"n": "3"}}"#, serverKey: f.keys.serverKey).body))
        ids.append(try id(try await curlV1(limit)))
        let text = try await stream.waitFor("four events") { parseEvents($0).count >= 4 }
        let events = parseEvents(text)
        #expect(events.map(\.id) == ids.map(Optional.some), "\(text)")
        #expect(ids == ids.sorted { UInt64($0)! < UInt64($1)! })
        for (index, event) in events.prefix(3).enumerated() {
            #expect(try jsonObject(event.data)["n"] as? String == String(index + 1))
        }
        try await f.daemon.terminate()
    }

    @Test("topics with v1 credentials: Instance ID with access_token_auth, per-token topicSubscriptions, a v1 topic send")
    func topics() async throws {
        let f = try await Self.fixture()
        let second = try await f.daemon.registerDevice(f.keys)
        let token = f.device.token
        let out = try await f.daemon.v1Requests(file: f.file, [
            V1Request(path: "/iid/v1:batchAdd", json: ["to": "/topics/news", "registration_tokens": [token]],
                      headers: ["access_token_auth": "true"]),
            V1Request(path: "/v1/projects/shop/registrations/\(second.token)/topicSubscriptions?topic_name=news", json: [:]),
            V1Request(path: "/v1/projects/shop/registrations/\(second.token)/topicSubscriptions?topic_name=sport", json: [:]),
            V1Request(method: "DELETE", path: "/v1/projects/shop/registrations/\(second.token)/topicSubscriptions/sport?allow_missing=true"),
            V1Request(path: "/v1/projects/shop/registrations/eeDh2Sd5HknG1zdC1w1UBD:APA91b\(String(repeating: "y", count: 110))/topicSubscriptions?topic_name=news", json: [:]),
            V1Request(path: "/iid/v1:batchAdd", json: ["to": "/topics/news", "registration_tokens": [token]]),
            V1Request(path: "/v1/projects/shop/messages:send", json: ["message": ["topic": "news", "data": ["t": "1"]]]),
        ])
        let r = out.responses
        #expect(r[0].status == 200 && r[0].body == #"{"results":[{}]}"#, "\(r[0].body)")
        #expect(r[1].status == 200 && r[2].status == 200 && r[3].status == 200)
        #expect(r[4].status == 404 && r[4].errorCode == "UNREGISTERED", "\(r[4].body)")
        #expect(r[5].status == 401)  // a bearer token without access_token_auth: true is not the Instance ID form
        #expect(r[6].status == 200, "\(r[6].body)")
        for device in [f.device, second] {
            let stream = try f.daemon.openStream(secret: device.secret)
            defer { stream.stop() }
            let text = try await stream.waitFor("the topic message") { parseEvents($0).contains { $0.data.contains(#""t":"1""#) } }
            let event = try #require(parseEvents(text).first { $0.data.contains(#""t":"1""#) })
            #expect(try jsonObject(event.data)["from"] as? String == "/topics/news")
        }
        let info = try await run("curl", ["-sS", "\(f.daemon.baseURL)/iid/info/\(second.token)?details=true",
                                          "-H", "Authorization: key=\(f.keys.serverKey)"])
        #expect(info.stdout.contains("news") && !info.stdout.contains("sport"))
        try await f.daemon.terminate()
    }

    @Test("pushrelay send --v1 --service-account sends through /token and messages:send; python-gcm booleans work")
    func sendCommandAndFormBooleans() async throws {
        let f = try await Self.fixture()
        let result = try await Daemon.cli([
            "send", "--v1", "--service-account", f.file, "--to", f.device.token, "--data", "k=v",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("projects/shop/messages/"), "\(result.stdout)")
        let stream = try f.daemon.openStream(secret: f.device.secret)
        defer { stream.stop() }
        try await stream.waitFor("the message") { parseEvents($0).contains { $0.data.contains(#""k":"v""#) } }

        // python-gcm writes Python booleans into form bodies.
        let form = try await run("curl", [
            "-sS", "-X", "POST", "\(f.daemon.baseURL)/gcm/send", "-H", "Authorization: key=\(f.keys.serverKey)",
            "-H", "Content-Type: application/x-www-form-urlencoded;charset=UTF-8",
            "--data", "registration_id=\(f.device.token)&dry_run=True&delay_while_idle=False&data.a=1",
        ])
        #expect(form.stdout == "id=fake_message_id", "\(form.stdout)")
        try await f.daemon.terminate()
    }
}
