import Foundation
import TestSupport
import Testing

/// Stream tickets and CORS on the device routes, with curl: what a browser relies on, without the browser.
@Suite("Stream tickets and CORS with curl", .serialized, .tags(.endToEnd), .hangGuard)
struct StreamTicketTests {
    @Test("a ticket opens the stream once (a refused request leaves it unused); a used or unknown ticket, or a ticket request without the secret, is 401")
    func ticketOnce() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let id = try await ClientLibraryTests.sendScenario(daemon, keys, to: device.token)
        let ticket = try await daemon.streamTicket(secret: device.secret)
        #expect(ticket.hasPrefix("tkt_"))
        // A request refused for what it carries (a Last-Event-ID that is no message id) leaves the ticket unused.
        let badResume = try await run("curl", ["-sS", "-w", "\n%{http_code}", "-H", "Last-Event-ID: abc",
                                               "\(daemon.baseURL)/v1/stream?ticket=\(ticket)"])
        #expect(badResume.stdout.hasSuffix("\n400") && badResume.stdout.contains("INVALID_ARGUMENT"), "\(badResume.stdout)")
        let stream = try StreamingProcess("curl", ["-sSN", "\(daemon.baseURL)/v1/stream?ticket=\(ticket)"])
        defer { stream.stop() }
        try await stream.waitFor("the scenario over the ticket's stream") { parseEvents($0).contains { $0.id == id } }

        let again = try await run("curl", ["-sS", "-w", "\n%{http_code}", "\(daemon.baseURL)/v1/stream?ticket=\(ticket)"])
        #expect(again.stdout.hasSuffix("\n401"), "\(again.stdout)")
        #expect(again.stdout.contains("UNAUTHENTICATED"))
        let unknown = try await run("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}",
                                             "\(daemon.baseURL)/v1/stream?ticket=tkt_nothing"])
        #expect(unknown.stdout == "401")
        for header in [[], ["-H", "Authorization: Bearer prd_wrong"]] {
            let refused = try await run("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST"]
                + header + ["\(daemon.baseURL)/v1/stream-ticket"])
            #expect(refused.stdout == "401")
        }
        try await daemon.terminate()
    }

    @Test("preflight and answers (a 405 too, with Allow) carry CORS headers for an allowed origin only; none are allowed by default")
    func cors() async throws {
        let allowed = "https://shop.example.com"
        let daemon = try Daemon(arguments: ["--cors-allowed-origins", allowed, "--max-request-body-size", "16KiB"])
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let preflight = { (daemon: Daemon, origin: String, path: String) in
            try await run("curl", [
                "-sS", "-D", "-", "-o", "/dev/null", "-X", "OPTIONS", "\(daemon.baseURL)\(path)", "-H", "Origin: \(origin)",
                "-H", "Access-Control-Request-Method: POST",
                "-H", "Access-Control-Request-Headers: authorization, content-type",
            ]).stdout.lowercased()
        }
        for (path, methods) in [("/v1/stream", "get"), ("/v1/ack", "post"), ("/v1/register", "post, delete"), ("/v1/stream-ticket", "post")] {
            let ok = try await preflight(daemon, allowed, path)
            #expect(ok.hasPrefix("http/1.1 204"), "\(path): \(ok)")
            #expect(ok.contains("access-control-allow-origin: \(allowed)\r\n"))
            #expect(ok.contains("access-control-allow-headers: authorization, content-type, last-event-id\r\n"))
            #expect(ok.contains("access-control-allow-methods: \(methods)\r\n"), "\(path): \(ok)")
            let refused = try await preflight(daemon, "https://evil.example", path)
            #expect(refused.hasPrefix("http/1.1 403"), "\(path): \(refused)")
            #expect(!refused.contains("access-control-allow-origin"))
        }
        // An answer (here an acknowledgement) names the allowed origin, and only that one.
        let ack = { (origin: String) in
            try await run("curl", [
                "-sS", "-D", "-", "-o", "/dev/null", "-X", "POST", "\(daemon.baseURL)/v1/ack", "-H", "Origin: \(origin)",
                "-H", "Authorization: Bearer \(device.secret)", "-H", "Content-Type: application/json",
                "--data-binary", #"{"ids": []}"#,
            ]).stdout.lowercased()
        }
        #expect(try await ack(allowed).contains("access-control-allow-origin: \(allowed)\r\n"))
        #expect(!(try await ack("https://evil.example")).contains("access-control-allow-origin"))

        // Errors too, so that a web app's fetch can read them: one the handler throws (an id that is no message
        // id), and the transport's 413 (a registration over max_request_body_size, 16 KiB here), on both protocols.
        let failing: [(status: String, arguments: [String])] = [
            ("400", ["-X", "POST", "\(daemon.baseURL)/v1/ack", "-H", "Authorization: Bearer \(device.secret)",
                     "-H", "Content-Type: application/json", "--data-binary", #"{"ids": ["x"]}"#]),
            ("413", ["-X", "POST", "\(daemon.baseURL)/v1/register", "-H", "Authorization: key=\(keys.clientKey)",
                     "-H", "Content-Type: application/json", "--data-binary",
                     #"{"pad":"\#(String(repeating: "x", count: 20_000))"}"#]),
            ("405", ["-X", "GET", "\(daemon.baseURL)/v1/register"]),
        ]
        for item in failing {
            for http in ["--http1.1", "--http2-prior-knowledge"] {
                for origin in [allowed, "https://evil.example"] {
                    let answer = try await run("curl", ["-sS", http, "-D", "-", "-o", "/dev/null", "-H", "Origin: \(origin)"]
                        + item.arguments).stdout.lowercased()
                    #expect(answer.contains(" \(item.status)"), "\(http) \(origin): \(answer)")
                    #expect(answer.contains("access-control-allow-origin: \(allowed)\r\n") == (origin == allowed),
                            "\(item.status) \(http) \(origin): \(answer)")
                }
            }
        }
        // A method the path is not served for: 405 in the device API's JSON, with Allow naming the path's methods
        // (the same list a preflight without Origin gives).
        for http in ["--http1.1", "--http2-prior-knowledge"] {
            let wrong = try await run("curl", ["-sS", http, "-D", "-", "-X", "GET", "\(daemon.baseURL)/v1/register"]).stdout
            #expect(wrong.lowercased().contains("allow: delete, options, post\r\n"), "\(http): \(wrong)")
            #expect(wrong.lowercased().contains("content-type: application/json"), "\(http): \(wrong)")
            #expect(wrong.contains(#""error":"INVALID_ARGUMENT""#) || wrong.contains(#""error": "INVALID_ARGUMENT""#), "\(http): \(wrong)")
        }
        let plain = try await run("curl", ["-sS", "-D", "-", "-o", "/dev/null", "-X", "OPTIONS", "\(daemon.baseURL)/v1/ack"]).stdout
        #expect(plain.lowercased().contains("allow: post, options\r\n"), "\(plain)")
        try await daemon.terminate()

        let closed = try Daemon()  // cors_allowed_origins unset
        try await closed.start()
        let refused = try await preflight(closed, allowed, "/v1/stream")
        #expect(refused.hasPrefix("http/1.1 403"), "\(refused)")
        #expect(!refused.contains("access-control-allow-origin"))
        try await closed.terminate()
    }
}
