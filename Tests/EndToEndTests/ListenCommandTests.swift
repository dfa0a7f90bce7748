import Foundation
import TestSupport
import Testing

/// `pushrelay listen` (the binary) against the real daemon, with curl as the back end.
@Suite("pushrelay listen against the real daemon", .serialized, .tags(.endToEnd), .hangGuard)
struct ListenCommandTests {
    /// The five lines, then the blank line that separates messages.
    static func screen(_ id: String) -> String {
        [
            "Message Id: \(id)", "Reason: Status de pedido", "Order Id: 3", "Status: Novo pedido",
            "Email: matilde@siecola.com.br",
        ].joined(separator: "\n") + "\n\n"
    }

    /// `--transport` for each of the client library's transports (`nio` is also the default).
    static let transports = ["nio", "urlsession"]

    @Test("listen --count 1 prints exactly the course's screen for the scenario sent with curl",
          arguments: transports)
    func screen(transport: String) async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let listener = try StreamingProcess(Daemon.binary, [
            "listen", "--server", daemon.baseURL, "--secret", device.secret, "--count", "1", "--timeout", "60",
            "--transport", transport,
        ])
        defer { listener.stop() }
        try await Task.sleep(for: .milliseconds(300))  // Connected or not, the relay queues the message.
        let id = try await ClientLibraryTests.sendScenario(daemon, keys, to: device.token)
        #expect(await listener.waitForExit() == 0)
        #expect(listener.text == Self.screen(id))
        try await daemon.terminate()
    }

    @Test("listen --json prints one JSON object with the message id, the envelope and the decoded notification",
          arguments: transports)
    func json(transport: String) async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let id = try await ClientLibraryTests.sendScenario(daemon, keys, to: device.token)
        let result = try await run(Daemon.binary, [
            "listen", "--server", daemon.baseURL, "--secret", device.secret, "--count", "1", "--timeout", "60",
            "--json", "--transport", transport,
        ])
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 1)
        let object = try jsonObject(String(lines.first ?? ""))
        #expect(object["message_id"] as? String == id)
        let envelope = try #require(object["envelope"] as? [String: Any])
        #expect(envelope["gcm.message_id"] as? String == id)
        #expect("\(object)".contains("matilde@siecola.com.br"))
        try await daemon.terminate()
    }

    @Test("listen --timeout exits non-zero when the messages do not arrive")
    func timeout() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let result = try await run(Daemon.binary, [
            "listen", "--server", daemon.baseURL, "--secret", device.secret, "--count", "1", "--timeout", "1",
        ])
        #expect(result.status != 0)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("timeout: 0 of 1"))
        try await daemon.terminate()
    }

    /// audit-i: a wrong secret printed the code twice and lost the relay's message; a wrong URL path read as an
    /// unregistered device; a damaged credentials file printed the usage text.
    @Test("listen says why it cannot start: the relay's refusal, a wrong URL, a damaged credentials file")
    func failuresSayWhy() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let wrongSecret = try await run(Daemon.binary, [
            "listen", "--server", daemon.baseURL, "--secret", "prd_wrong", "--count", "1", "--timeout", "30",
        ])
        #expect(wrongSecret.status == 1)
        #expect(wrongSecret.stderr.contains("refused (401): UNAUTHENTICATED (unknown device secret)"), "\(wrongSecret.stderr)")
        #expect(!wrongSecret.stderr.contains("unauthorized: unauthorized"), "\(wrongSecret.stderr)")
        let wrongPath = try await run(Daemon.binary, [
            "listen", "--server", daemon.baseURL + "/nope", "--secret", "prd_x", "--count", "1", "--timeout", "30",
        ])
        #expect(wrongPath.status == 1)
        #expect(wrongPath.stderr.contains("not found (404)") && !wrongPath.stderr.contains("not registered"), "\(wrongPath.stderr)")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).json")
        try Data("{bad".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let damaged = try await run(Daemon.binary, [
            "listen", "--server", daemon.baseURL, "--credentials", file.path, "--count", "1",
        ])
        #expect(damaged.status == 66, "\(damaged.stderr)")
        #expect(damaged.stderr.contains("cannot read credentials") && !damaged.stderr.contains("Usage:"), "\(damaged.stderr)")
        // audit-p: a relay that cannot be reached made listen print only "[reconnecting …]", for ever, without why.
        let port = daemon.port
        try await daemon.terminate()
        let unreachable = try await run(Daemon.binary, [
            "listen", "--server", "http://127.0.0.1:\(port)", "--secret", "prd_x", "--count", "1", "--timeout", "2",
        ])
        #expect(unreachable.status == 1)
        #expect(unreachable.stderr.contains("stream lost") && unreachable.stderr.contains("relay.reason="), "\(unreachable.stderr)")
    }

    @Test("listen --project --client-key registers, prints the token and saves the credentials for the next run",
          arguments: transports)
    func registration(transport: String) async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let file = daemon.dataDir.appendingPathComponent("device.json")
        let first = try await run(Daemon.binary, [
            "listen", "--server", daemon.baseURL, "--project", keys.project, "--client-key", keys.clientKey,
            "--save", file.path, "--count", "1", "--timeout", "1", "--transport", transport,
        ])
        #expect(first.status != 0)  // Nothing was sent: the timeout.
        let tokenLine = try #require(first.stdout.split(separator: "\n").first { $0.hasPrefix("Token: ") })
        let token = String(tokenLine.dropFirst("Token: ".count))
        #expect(token.contains(":APA91b"))
        #expect(FileManager.default.fileExists(atPath: file.path))

        // The back end sends to the printed token; the next run starts from the saved credentials.
        let id = try await ClientLibraryTests.sendScenario(daemon, keys, to: token)
        let second = try await run(Daemon.binary, [
            "listen", "--server", daemon.baseURL, "--credentials", file.path, "--count", "1", "--timeout", "60",
            "--transport", transport,
        ])
        #expect(second.status == 0)
        #expect(second.stdout == "Token: \(token)\n" + Self.screen(id))
        try await daemon.terminate()
    }

    /// A relay that refuses the registration for now (429 with `Retry-After`: here the address's registration rate,
    /// spent) is waited for, as an unreachable relay is: listen registers once it may, then receives.
    @Test("listen --project --client-key waits out a 429 at registration, then registers and receives")
    func registrationWaitsOutRateLimit() async throws {
        // 6 a minute: a burst of 6, then one every 10 s, so a loaded machine's slow curls still spend it.
        let daemon = try Daemon(arguments: ["--registration-rate-per-address", "6"])
        try await daemon.start()
        let keys = try await daemon.createProject()
        var refused = false
        for _ in 0..<60 where !refused {
            let answer = try await run("curl", [
                "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "\(daemon.baseURL)/v1/register",
                "-H", "Authorization: key=\(keys.clientKey)", "-H", "Content-Type: application/json",
                "-d", #"{"project": "\#(keys.project)", "app": "a.b", "platform": "android"}"#,
            ])
            refused = answer.stdout == "429"
        }
        #expect(refused, "the address's registrations are spent")
        let listener = try StreamingProcess(Daemon.binary, [
            "listen", "--server", daemon.baseURL, "--project", keys.project, "--client-key", keys.clientKey,
            "--count", "1", "--timeout", "120",
        ], standardError: true)
        defer { listener.stop() }
        let text = try await listener.waitFor(timeout: .seconds(60), "the token after the wait") {
            $0.contains("Token: ")
        }
        #expect(text.contains("status 429") && text.contains("[reconnecting (attempt 1"), "\(text)")
        let tokenLine = try #require(text.split(separator: "\n").first { $0.hasPrefix("Token: ") })
        let id = try await ClientLibraryTests.sendScenario(daemon, keys, to: String(tokenLine.dropFirst("Token: ".count)))
        #expect(await listener.waitForExit() == 0, "\(listener.text)")
        #expect(listener.text.contains(Self.screen(id)), "\(listener.text)")
        try await daemon.terminate()
    }
}
