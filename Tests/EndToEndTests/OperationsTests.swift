import Foundation
import TestSupport
import Testing

/// `/healthz`, `/readyz`, `/metrics` on the real daemon, and docs/openapi.yaml validated.
@Suite(.serialized, .tags(.endToEnd), .hangGuard) struct OperationsTests {
    static var repository: URL {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }

    /// GET with curl; returns the status and the body.
    static func get(_ url: String) async throws -> (status: Int, body: String) {
        let result = try await run("curl", ["-sS", url, "-w", "\n%{http_code}"])
        var lines = result.stdout.components(separatedBy: "\n")
        let status = Int(lines.removeLast()) ?? 0
        return (status, lines.joined(separator: "\n"))
    }

    /// The value of an unlabelled sample `name` in Prometheus text, if present.
    static func sample(_ name: String, in text: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    @Test func healthReadinessAndMetrics() async throws {
        // The queue-depth gauge is refreshed every `metrics_interval`, not per request.
        let daemon = try Daemon(arguments: ["--metrics-interval", "1s"])
        try await daemon.start()
        let health = try await Self.get("\(daemon.baseURL)/healthz")
        #expect(health.status == 200)
        let ready = try await Self.get("\(daemon.baseURL)/readyz")
        #expect(ready.status == 200)
        #expect(ready.body.contains("ready"))

        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let body = scenarioBody.replacingOccurrences(of: "TOKEN", with: device.token)
        _ = try await messageID(ofSendResponse: daemon.send(body, serverKey: keys.serverKey).body)
        #expect(try await daemon.send(body, serverKey: "wrong").status == 401)

        let before = try await Self.get("\(daemon.baseURL)/metrics")
        #expect(before.status == 200)
        #expect((Self.sample("pushrelay_sends_accepted_total", in: before.body) ?? 0) >= 1, "\(before.body)")
        // The 401 above, under the label operations.md names for it.
        #expect(before.body.contains(#"pushrelay_sends_rejected_total{error="Authentication"} 1"#), "\(before.body)")
        #expect(before.body.contains("pushrelay_store_commit_duration_seconds_bucket"))
        // The histograms are recorded, not just declared: each commit and each delivery counts.
        #expect((Self.sample("pushrelay_store_commit_duration_seconds_count", in: before.body) ?? 0) >= 1)
        let depth = try await poll(for: .seconds(20)) {
            Self.sample("pushrelay_queue_depth", in: try await Self.get("\(daemon.baseURL)/metrics").body) ?? 0
        } until: { $0 >= 1 }
        #expect(depth >= 1, "the queue depth never moved with metrics_interval = 1s")
        // On SQLite the send's commit wrote pages to the WAL (the first checkpoint comes at 1,000); PostgreSQL
        // keeps no WAL in the node's files: 0.
        let wal = Self.sample("pushrelay_store_wal_pages", in: try await Self.get("\(daemon.baseURL)/metrics").body)
        if E2EStore.current == .sqlite {
            #expect((wal ?? 0) >= 1, "pushrelay_store_wal_pages: \(String(describing: wal))")
        } else {
            #expect(wal == 0, "pushrelay_store_wal_pages on PostgreSQL: \(String(describing: wal))")
        }
        #expect(Self.sample("pushrelay_connected_devices", in: before.body) == 0, "\(before.body)")

        // A connected device moves the gauges, and they come back when it goes.
        let stream = try daemon.openStream(secret: device.secret)
        try await stream.waitFor("the message") { !parseEvents($0).isEmpty }
        // One sent while the device is online: the send-to-deliver latency (the backlog above is not one).
        let live = try await messageID(ofSendResponse: daemon.send(body, serverKey: keys.serverKey).body)
        try await stream.waitFor("the live message") { parseEvents($0).contains { $0.id == live } }
        let connected = try await Self.get("\(daemon.baseURL)/metrics").body
        #expect(Self.sample("pushrelay_connected_devices", in: connected) == 1, "\(connected)")
        #expect(Self.sample("pushrelay_open_streams", in: connected) == 1)
        #expect((Self.sample("pushrelay_messages_delivered_total", in: connected) ?? 0) >= 1)
        #expect((Self.sample("pushrelay_send_to_deliver_duration_seconds_count", in: connected) ?? 0) >= 1, "\(connected)")
        stream.stop()

        let after = try await poll(every: .milliseconds(50), for: .seconds(10)) {
            try await Self.get("\(daemon.baseURL)/metrics").body
        } until: { Self.sample("pushrelay_connected_devices", in: $0) == 0 }
        #expect(Self.sample("pushrelay_connected_devices", in: after) == 0, "\(after)")
        #expect(Self.sample("pushrelay_open_streams", in: after) == 0)
    }

    /// docs/openapi.yaml is a valid OpenAPI document (openapi-spec-validator). That it matches the routes both ways,
    /// and the answers' statuses and content types, is checked in process: `OpenAPIConformanceTests`.
    /// Sub-second timeouts reach the transport whole: `idle_timeout = 800ms` was 0 s (every connection reset at
    /// once). A keep-alive connection serves two requests, then is closed after its idle time, long before a second.
    @Test func subSecondIdleTimeout() async throws {
        let daemon = try Daemon(arguments: ["--idle-timeout", "800ms", "--shutdown-drain-timeout", "700ms"])
        try await daemon.start()
        let script = """
            import socket, sys, time
            s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
            s.settimeout(10)
            answers = 0
            for _ in range(2):
                s.sendall(b'GET /healthz HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')
                data = b''
                while b'{"status":"ok"}' not in data:
                    data += s.recv(4096)
                answers += 1
            start = time.monotonic()
            while s.recv(4096):
                pass
            print(answers, 'closed after', round(time.monotonic() - start, 2))
            """
        let result = try await run("python3", ["-c", script, String(daemon.port)])
        let words = result.stdout.split(separator: " ")
        #expect(words.first == "2", "\(result.stdout) \(result.stderr)")
        #expect(words.last.flatMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }.map { $0 < 5 } == true,
                "\(result.stdout)")
        #expect(try await daemon.terminate() == 0)
    }

    @Test func openAPISpecIsValid() async throws {
        let spec = Self.repository.appendingPathComponent("docs/openapi.yaml").path
        let script = """
            import sys, yaml
            from openapi_spec_validator import validate
            validate(yaml.safe_load(open(sys.argv[1])))
            """
        let result = try await run("python3", ["-c", script, spec])
        #expect(result.status == 0, "openapi-spec-validator: \(result.stderr)")
    }
}
