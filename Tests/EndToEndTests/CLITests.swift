import Foundation
import TestSupport
import Testing

/// `pushrelay register` and `pushrelay send` against the real daemon, with a curl stream as the device.
@Suite(.serialized) struct CLITests {
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

        let stream = try daemon.openStream(secret: device.secret)
        defer { stream.stop() }
        try await stream.waitFor("the stream to open") { $0.contains(": connected") }

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
    }

    @Test func sendExitsNonZeroOnFailuresAndHTTPErrors() async throws {
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

        // A registration with a wrong client key fails.
        let register = try await Daemon.cli([
            "register", "--server", daemon.baseURL, "--project", keys.project, "--client-key", "wrong",
        ])
        #expect(register.status == 1)
    }
}
