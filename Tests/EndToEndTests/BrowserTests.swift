import Foundation
import TestSupport
import Testing

/// A web app on another origin, in headless Chromium from Debian, against the daemon's TLS listener: CORS on the
/// device routes and stream tickets for `EventSource`, with `Examples/web/pushrelay.js` as the client.
@Suite("Browsers: CORS and stream tickets (headless Chromium over TLS)", .serialized, .tags(.endToEnd), .hangGuard)
struct BrowserTests {
    static var repository: URL {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }

    /// The page's origin: a Python HTTPS server with the test certificate, serving the example client and the test
    /// page, and recording what the page reports.
    final class PageOrigin: Sendable {
        let process: StreamingProcess
        let port: Int
        let resultFile: String
        var origin: String { "https://localhost:\(port)" }

        init(pki: TestPKI) async throws {
            resultFile = pki.directory + "/result-\(UUID().uuidString).json"
            let repository = BrowserTests.repository.path
            process = try StreamingProcess("python3", [
                repository + "/Tests/Browser/origin_server.py", pki.certificateFile, pki.keyFile, resultFile,
                repository + "/Tests/Browser", repository + "/Examples/web",
            ])
            let text = try await process.waitFor("the page server's port") { $0.contains("\n") }
            guard let port = text.split(separator: " ").last.flatMap({ Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) })
            else { throw DaemonError(message: "page server: \(text)") }
            self.port = port
        }

        /// Opens `page` in headless Chromium and returns what the page reported.
        func report(_ query: [String: String], pki: TestPKI) async throws -> [String: Any] {
            var components = URLComponents(string: origin + "/harness.html")!
            components.queryItems = query.map { URLQueryItem(name: $0.key, value: $0.value) }
            let profile = pki.directory + "/chromium-\(UUID().uuidString)"
            let browser = try StreamingProcess("chromium", [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--user-data-dir=\(profile)", "--ignore-certificate-errors-spki-list=\(try await pki.spkiHash())",
                components.url!.absoluteString,
            ])
            defer { browser.stop() }
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(60)
            while clock.now < deadline {
                if let data = FileManager.default.contents(atPath: resultFile) {
                    try? FileManager.default.removeItem(atPath: resultFile)
                    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw DaemonError(message: "the page reported nothing within 60 s")
        }

        deinit { process.stop() }
    }

    /// A daemon with a TLS listener that allows `origins`.
    static func daemon(pki: TestPKI, allowing origins: [String]) async throws -> Daemon {
        let daemon = try Daemon(arguments: [
            "--listen-tls", "127.0.0.1:0", "--tls-cert", pki.certificateFile, "--tls-key", pki.keyFile,
        ] + origins.flatMap { ["--cors-allowed-origins", $0] })
        try await daemon.start()
        return daemon
    }

    @Test("with the origin allowed, the page receives the scenario, decodes it and acknowledges it",
          arguments: ["eventsource", "fetch"])
    func allowedOrigin(transport: String) async throws {
        let pki = try await TestPKI()
        let page = try await PageOrigin(pki: pki)
        let daemon = try await Self.daemon(pki: pki, allowing: [page.origin])
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let id = try await ClientLibraryTests.sendScenario(daemon, keys, to: device.token)
        let result = try await page.report(
            ["mode": transport, "server": daemon.tlsURL, "secret": device.secret], pki: pki)
        #expect(result["error"] == nil, "\(result)")
        #expect(result["id"] as? String == id)
        #expect(result["messageId"] as? String == id)
        #expect(result["screen"] as? [String] == [
            "Message Id: \(id)", "Reason: Status de pedido", "Order Id: 3", "Status: Novo pedido",
            "Email: matilde@siecola.com.br",
        ])
        #expect(result["acked"] as? [String] == [id])
        #expect(result["acknowledged"] as? Int == 1)
        // Acknowledged: a later message is the first thing a new stream gets.
        let later = try await ClientLibraryTests.sendScenario(daemon, keys, to: device.token, orderID: 4)
        #expect(try await ClientLibraryTests.idsOnNewStream(daemon, secret: device.secret, until: later) == [later])
        try await daemon.terminate()
    }

    @Test("with the origin not allowed, Chromium blocks fetch and EventSource; nothing is acknowledged")
    func originNotAllowed() async throws {
        let pki = try await TestPKI()
        let page = try await PageOrigin(pki: pki)
        let daemon = try await Self.daemon(pki: pki, allowing: ["https://shop.example.com"])
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let id = try await ClientLibraryTests.sendScenario(daemon, keys, to: device.token)
        let ticket = try await daemon.streamTicket(secret: device.secret)
        let result = try await page.report(
            ["mode": "blocked", "server": daemon.tlsURL, "secret": device.secret, "ticket": ticket], pki: pki)
        #expect(result["ticketFetch"] as? String == "blocked: TypeError", "\(result)")
        #expect(result["streamFetch"] as? String == "blocked: TypeError", "\(result)")
        #expect((result["eventSource"] as? String)?.hasPrefix("blocked") == true, "\(result)")
        // The message is still pending: the page never read it.
        #expect(try await ClientLibraryTests.idsOnNewStream(daemon, secret: device.secret, until: id) == [id])
        try await daemon.terminate()
    }
}

extension TestPKI {
    /// The base64 SHA-256 of the server certificate's public key, for Chromium's
    /// `--ignore-certificate-errors-spki-list` (how a test browser trusts the test CA's server without a profile).
    func spkiHash() async throws -> String {
        let result = try await run("sh", ["-c", """
            openssl x509 -in "$1" -pubkey -noout | openssl pkey -pubin -outform der \
            | openssl dgst -sha256 -binary | base64
            """, "sh", certificateFile])
        guard result.status == 0 else { throw DaemonError(message: "spki: \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

extension Daemon {
    /// `POST /v1/stream-ticket` with the device secret (curl, cleartext); the ticket.
    func streamTicket(secret: String, origin: String? = nil) async throws -> String {
        let result = try await run("curl", [
            "-sS", "--fail-with-body", "-X", "POST", "\(baseURL)/v1/stream-ticket", "-H", "Authorization: Bearer \(secret)",
        ])
        guard result.status == 0, let ticket = try jsonObject(result.stdout)["ticket"] as? String else {
            throw DaemonError(message: "stream-ticket: \(result.stdout) \(result.stderr)")
        }
        return ticket
    }
}
