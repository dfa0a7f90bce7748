import Foundation
import TestSupport
import Testing

/// `pushrelay register` and `pushrelay send` against the real daemon, with a curl stream as the device.
@Suite(.serialized, .tags(.endToEnd), .hangGuard) struct CLITests {
    /// The scenario's `orderInfo`, as `--order-info` takes it.
    static let orderInfo = #"{"infoReason":"Status de pedido","orderID":3,"#
        + #""userEmail":"matilde@siecola.com.br","newOrderStatus":"Novo pedido"}"#

    /// Registers with the CLI and returns the device's token and secret.
    static func register(_ daemon: Daemon, _ keys: ProjectKeys) async throws
        -> (token: String, secret: String, senderID: String)
    {
        let result = try await Daemon.cli([
            "register", "--server", daemon.baseURL, "--project", keys.project, "--client-key", keys.clientKey,
            "--app", "br.com.siecola.shop", "--platform", "ios", "--json",
        ])
        #expect(result.status == 0, "register: \(result.stderr)")
        let json = try jsonObject(result.stdout)
        return (json["token"] as? String ?? "", json["secret"] as? String ?? "", json["sender_id"] as? String ?? "")
    }

    @Test func registerAndSendTheScenarioWithOrderInfo() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await Self.register(daemon, keys)
        #expect(device.token.contains(":APA91b"))
        #expect(device.senderID == keys.senderID)

        let stream = try await daemon.openConnectedStream(secret: device.secret)
        defer { stream.stop() }

        let result = try await Daemon.cli([
            "send", "--server", daemon.baseURL, "--server-key", keys.serverKey, "--to", device.token,
            "--title", "Provedor de Mensagens", "--body", "Status do pedido", "--order-info", Self.orderInfo,
            "--priority", "high", "--content-available",
        ])
        #expect(result.status == 0, "send: \(result.stdout) \(result.stderr)")
        let id = try messageID(ofSendResponse: result.stdout)

        let text = try await stream.waitFor("the event") { parseEvents($0).contains { $0.id == id } }
        let event = try #require(parseEvents(text).first { $0.id == id })
        try expectScenarioEnvelope(event.data, messageID: id, senderID: keys.senderID)
    }

    @Test func sendRawJSONFromStandardInput() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await Self.register(daemon, keys)
        let stream = try daemon.openStream(secret: device.secret)
        defer { stream.stop() }

        let body = scenarioBody.replacingOccurrences(of: "TOKEN", with: device.token)
        let result = try await Daemon.cli(
            ["send", "--server", daemon.baseURL, "--server-key", keys.serverKey, "--json", "-"], stdin: body)
        #expect(result.status == 0, "send: \(result.stdout) \(result.stderr)")
        let id = try messageID(ofSendResponse: result.stdout)
        let text = try await stream.waitFor("the event") { parseEvents($0).contains { $0.id == id } }
        try expectScenarioEnvelope(
            try #require(parseEvents(text).first { $0.id == id }).data, messageID: id, senderID: keys.senderID)
    }

    /// audit-i: `send --to T` without any content flag sent an empty message and exited 0, though the help asks
    /// for at least one.
    @Test func sendWithoutContentIsAUsageError() async throws {
        let result = try await Daemon.cli([
            "send", "--server", "http://127.0.0.1:9", "--server-key", "k", "--to", "t",
        ])
        #expect(result.status == 64)
        #expect(result.stderr.contains("at least one of --title, --body, --order-info, --data"), "\(result.stderr)")
    }

    @Test func sendDataCollapseKeyAndTTLReachTheEnvelope() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await Self.register(daemon, keys)
        let result = try await Daemon.cli([
            "send", "--server", daemon.baseURL, "--server-key", keys.serverKey, "--to", device.token,
            "--title", "t", "--data", "order=42", "--data", "kind=a=b", "--collapse-key", "orders", "--ttl", "600",
        ])
        #expect(result.status == 0, "send: \(result.stdout) \(result.stderr)")
        let id = try messageID(ofSendResponse: result.stdout)
        let stream = try daemon.openStream(secret: device.secret)
        defer { stream.stop() }
        let text = try await stream.waitFor("the event") { parseEvents($0).contains { $0.id == id } }
        let envelope = try jsonObject(try #require(parseEvents(text).first { $0.id == id }).data)
        #expect(envelope["order"] as? String == "42")
        #expect(envelope["kind"] as? String == "a=b")
        #expect(envelope["collapse_key"] as? String == "orders")
        // --ttl 600: the queued row expires 600 s after it was sent (the store's clock is Unix time in µs).
        let sentAt = Date().timeIntervalSince1970
        let row = try await daemon.query("SELECT expires_at FROM messages WHERE collapse_key = 'orders'")
        let expiresAt = try #require(Double(row), "\(row)")
        let ttl = expiresAt / 1_000_000 - sentAt
        #expect(ttl > 570 && ttl <= 600, "expires \(ttl) s after the send")
    }

    /// After a leak, against a running daemon: `project rotate-key` then `revoke-key` cut the old server key off
    /// (401) while the new one sends; `project rotate-client-key` makes the old client key refuse registrations
    /// while the new one registers and devices registered before still receive. An unknown project is one line.
    @Test func rotateClientKeyAndRevokePreviousServerKeys() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await Self.register(daemon, keys)
        let store = ["--data-dir", daemon.dataDir.path] + daemon.storeArguments

        let rotated = try await Daemon.cli(["project", "rotate-key", keys.project, "--json"] + store)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let serverKey = try #require(try jsonObject(rotated.stdout)["server_key"] as? String)
        let body = #"{"to": "\#(device.token)", "data": {"k": "v"}}"#
        #expect(try await daemon.send(body, serverKey: keys.serverKey).status == 200, "in its grace period")
        let revoked = try await Daemon.cli(["project", "revoke-key", keys.project, "--json"] + store)
        #expect(revoked.status == 0, "\(revoked.stderr)")
        #expect(try jsonObject(revoked.stdout)["revoked"] as? Int == 1, "\(revoked.stdout)")
        #expect(try await Self.eventually { try await daemon.send(body, serverKey: keys.serverKey).status == 401 })
        #expect(try await daemon.send(body, serverKey: serverKey).status == 200)

        let newClient = try await Daemon.cli(["project", "rotate-client-key", keys.project] + store)
        #expect(newClient.status == 0, "\(newClient.stderr)")
        let clientKey = try #require(
            newClient.stdout.split(separator: "\n").first?.split(separator: " ").last.map(String.init))
        let old = try await Daemon.cli([
            "register", "--server", daemon.baseURL, "--project", keys.project, "--client-key", keys.clientKey, "--json",
        ])
        #expect(old.status != 0 && old.stderr.contains("401"), "\(old.status) \(old.stderr)")
        let fresh = try await Self.register(
            daemon, ProjectKeys(project: keys.project, senderID: keys.senderID, serverKey: serverKey, clientKey: clientKey))
        #expect(!fresh.token.isEmpty)
        let id = try messageID(ofSendResponse: try await daemon.send(body, serverKey: serverKey).body)
        let stream = try daemon.openStream(secret: device.secret)
        defer { stream.stop() }
        _ = try await stream.waitFor("the message on the device registered before") { parseEvents($0).contains { $0.id == id } }

        let unknown = try await Daemon.cli(["project", "rotate-client-key", "nope"] + store)
        #expect(unknown.status == 64 && unknown.stderr.contains("no project named nope"), "\(unknown.stderr)")
        // One line saying why, not the argument parser's usage text (which names no wrong option).
        for arguments in [["project", "delete", "nope"], ["project", "create", keys.project], ["project", "rotate-key", "nope"]] {
            let refused = try await Daemon.cli(arguments + store)
            let lines = refused.stderr.split(separator: "\n")
            #expect(refused.status == 64 && lines.count == 1 && lines.first?.hasPrefix("pushrelay: ") == true, "\(arguments): \(refused.stderr)")
            #expect(!refused.stderr.contains("Usage:"), "\(arguments): \(refused.stderr)")
        }
        // A negative grace period is refused as such, in both spellings, and changes nothing.
        for arguments in [["--grace-seconds", "-5"], ["--grace-seconds=-5"]] {
            let negative = try await Daemon.cli(["project", "rotate-key", keys.project] + arguments + store)
            #expect(negative.status == 64, "\(arguments): \(negative.stderr)")
            #expect(negative.stderr.contains("--grace-seconds must not be negative"), "\(arguments): \(negative.stderr)")
        }
        #expect(try await daemon.send(body, serverKey: serverKey).status == 200, "the key in use stays")
        #expect(try await daemon.terminate() == 0)
    }

    /// Polls `condition` every 100 ms for at most 10 s.
    static func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return try await condition()
    }

    @Test func sendExitsNonZeroOnFailuresTopicErrorsAndHTTPErrors() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await Self.register(daemon, keys)

        // HTTP 200 with failure 1 (an unknown token): the answer is printed, the exit status is 1.
        let unknown = try await Daemon.cli([
            "send", "--server", daemon.baseURL, "--server-key", keys.serverKey, "--to", device.token + "x",
            "--title", "t",
        ])
        #expect(unknown.status == 1)
        #expect(unknown.stdout.contains("\"failure\":1"))

        // 401: a wrong server key.
        let unauthorized = try await Daemon.cli([
            "send", "--server", daemon.baseURL, "--server-key", "wrong", "--to", device.token, "--title", "t",
        ])
        #expect(unauthorized.status == 1)
        #expect(unauthorized.stderr.contains("HTTP 401"))

        // 400: a body that is not JSON, posted raw.
        let malformed = try await Daemon.cli(
            ["send", "--server", daemon.baseURL, "--server-key", keys.serverKey, "--json", "-"], stdin: "{nope")
        #expect(malformed.status == 1)
        #expect(malformed.stderr.contains("HTTP 400"))

        // HTTP 200 {"error": ...}: a topic send refused as a whole (a reserved data key), nothing queued.
        let topic = try await Daemon.cli([
            "send", "--server", daemon.baseURL, "--server-key", keys.serverKey, "--to", "/topics/news", "--data", "from=x",
        ])
        #expect(topic.status == 1, "\(topic.stdout) \(topic.stderr)")
        #expect(topic.stdout.contains("InvalidDataKey"))
        #expect(topic.stderr.contains("refused the message: InvalidDataKey"))
        let accepted = try await Daemon.cli([
            "send", "--server", daemon.baseURL, "--server-key", keys.serverKey, "--to", "/topics/news", "--data", "n=1",
        ])
        #expect(accepted.status == 0, "\(accepted.stdout) \(accepted.stderr)")

        // A registration with a wrong client key fails.
        let register = try await Daemon.cli([
            "register", "--server", daemon.baseURL, "--project", keys.project, "--client-key", "wrong",
        ])
        #expect(register.status == 1)
    }
}
