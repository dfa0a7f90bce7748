import Foundation
import TestSupport
import Testing

/// The seed scenario's send body, exactly as the back end posts it.
let scenarioBody = """
    {
      "to": "TOKEN",
      "notification": {
        "body": "Status do pedido",
        "title": "Provedor de Mensagens",
        "orderInfo": {
          "infoReason": "Status de pedido",
          "orderID": 3,
          "userEmail": "matilde@siecola.com.br",
          "newOrderStatus": "Novo pedido"
        }
      },
      "priority": "high",
      "content_available": true
    }
    """

struct ProjectKeys {
    var project: String
    var senderID: String
    var serverKey: String
    var clientKey: String
}

struct DeviceKeys {
    var token: String
    var secret: String
}

extension Daemon {
    /// `pushrelay project create NAME --data-dir DIR --json`.
    func createProject(_ name: String = "shop") async throws -> ProjectKeys {
        try await prepareStore()
        let result = try await Daemon.cli(["project", "create", name, "--data-dir", dataDir.path, "--json"] + storeArguments)
        guard result.status == 0 else { throw DaemonError(message: "project create failed: \(result.stderr)") }
        let json = try jsonObject(result.stdout)
        return ProjectKeys(
            project: json["project"] as? String ?? "",
            senderID: "\(json["sender_id"] ?? "")",
            serverKey: json["server_key"] as? String ?? "",
            clientKey: json["client_key"] as? String ?? ""
        )
    }

    /// Registers a device with curl, as an app would.
    /// Registers `count` devices one after the other.
    func registerDevices(_ keys: ProjectKeys, count: Int) async throws -> [DeviceKeys] {
        var devices: [DeviceKeys] = []
        for _ in 0..<count { devices.append(try await registerDevice(keys)) }
        return devices
    }

    func registerDevice(_ keys: ProjectKeys, app: String = "br.com.siecola.shop", platform: String = "ios") async throws -> DeviceKeys {
        let body = #"{"project":"\#(keys.project)","app":"\#(app)","platform":"\#(platform)"}"#
        let result = try await run("curl", [
            "-sS", "--fail-with-body", "-X", "POST", "\(baseURL)/v1/register",
            "-H", "Authorization: key=\(keys.clientKey)", "-H", "Content-Type: application/json", "--data-binary", body,
        ])
        guard result.status == 0 else { throw DaemonError(message: "register failed: \(result.stdout) \(result.stderr)") }
        let json = try jsonObject(result.stdout)
        return DeviceKeys(token: json["token"] as? String ?? "", secret: json["secret"] as? String ?? "")
    }

    /// Posts an FCM body with curl (HTTP/1.1 unless other flags say otherwise); returns status and body.
    func send(_ body: String, serverKey: String, curlFlags: [String] = ["--http1.1"], path: String = "/fcm/send")
        async throws -> (status: Int, body: String)
    {
        let result = try await run("curl", curlFlags + [
            "-sS", "-X", "POST", "\(baseURL)\(path)", "-H", "Authorization: key=\(serverKey)",
            "-H", "Content-Type: application/json", "--data-binary", "@-", "-w", "\n%{http_code}",
        ], stdin: body)
        guard result.status == 0 else { throw DaemonError(message: "curl failed: \(result.stderr)") }
        var lines = result.stdout.components(separatedBy: "\n")
        let status = Int(lines.removeLast()) ?? 0
        return (status, lines.joined(separator: "\n"))
    }

    /// Opens the device's event stream (``openStream(secret:lastEventID:curlFlags:)``) and waits for its
    /// `: connected` comment; the stream is stopped if it does not come.
    func openConnectedStream(
        secret: String, lastEventID: String? = nil, curlFlags: [String] = [], timeout: Duration = .seconds(10),
        _ what: String = "the stream to open"
    ) async throws -> StreamingProcess {
        let stream = try openStream(secret: secret, lastEventID: lastEventID, curlFlags: curlFlags)
        do {
            try await stream.waitFor(timeout: timeout, what) { $0.contains(": connected") }
        } catch {
            stream.stop()
            throw error
        }
        return stream
    }

    /// Opens the device's event stream with `curl -N`.
    func openStream(secret: String, lastEventID: String? = nil, curlFlags: [String] = []) throws -> StreamingProcess {
        var args = curlFlags + ["-sSN", "\(baseURL)/v1/stream", "-H", "Authorization: Bearer \(secret)"]
        if let lastEventID { args += ["-H", "Last-Event-ID: \(lastEventID)"] }
        return try StreamingProcess("curl", args)
    }
}

/// The message id of a single-token FCM answer.
func messageID(ofSendResponse body: String) throws -> String {
    let json = try jsonObject(body)
    guard (json["success"] as? Int) == 1, let results = json["results"] as? [[String: Any]],
        let id = results.first?["message_id"] as? String
    else { throw DaemonError(message: "not a success: \(body)") }
    return id
}

/// Checks that an envelope is the scenario's, carrying `messageID`.
func expectScenarioEnvelope(_ data: String, messageID: String, senderID: String) throws {
    let envelope = try jsonObject(data)
    #expect(envelope["gcm.message_id"] as? String == messageID)
    #expect(envelope["google.c.sender.id"] as? String == senderID)
    let aps = envelope["aps"] as? [String: Any]
    let alert = aps?["alert"] as? [String: Any]
    #expect(alert?["title"] as? String == "Provedor de Mensagens")
    #expect(alert?["body"] as? String == "Status do pedido")
    #expect(aps?["content-available"] as? Int == 1)
    let orderText = try #require(envelope["gcm.notification.orderInfo"] as? String)
    let order = try jsonObject(orderText)
    #expect(order["orderID"] as? Int == 3)
    #expect(order["userEmail"] as? String == "matilde@siecola.com.br")
    #expect(order["newOrderStatus"] as? String == "Novo pedido")
    #expect(order["infoReason"] as? String == "Status de pedido")
}
