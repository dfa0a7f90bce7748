import Foundation
import TestSupport
import Testing

/// Every metric the Grafana dashboard (`deploy/grafana-dashboard.json`) queries moves on the real daemon when the
/// thing it counts happens: a panel or an alert on a metric that is never recorded could never show anything.
@Suite(.tags(.endToEnd), .hangGuard) struct MetricsTests {
    /// The metric names the dashboard's queries use (`pushrelay_…`, histogram suffixes included).
    static func dashboardMetricNames() throws -> Set<String> {
        let path = OperationsTests.repository.appendingPathComponent("deploy/grafana-dashboard.json")
        let text = try String(contentsOf: path, encoding: .utf8)
        let pattern = try NSRegularExpression(pattern: #"pushrelay_[a-z_]+"#)
        let range = NSRange(text.startIndex..., in: text)
        return Set(pattern.matches(in: text, range: range).map { String(text[Range($0.range, in: text)!]) })
    }

    /// Prometheus text as the sum of every sample of each name (labels summed over).
    static func totals(_ text: String) -> [String: Double] {
        var totals: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            let series = line[..<space]
            let name = series.firstIndex(of: "{").map { String(series[..<$0]) } ?? String(series)
            totals[name, default: 0] += value
        }
        return totals
    }

    /// Holds `count` connections from 127.0.0.2 open, then opens one more and reports whether the daemon closed it
    /// unanswered (the per-address limit); keeps the held ones open until stopped.
    static func holdConnections(port: Int, count: Int) throws -> StreamingProcess {
        let script = """
            import socket, sys, time
            held = []
            for _ in range(\(count)):
                s = socket.socket(); s.bind(("127.0.0.2", 0)); s.connect(("127.0.0.1", \(port))); held.append(s)
            time.sleep(0.5)
            print("held", flush=True)
            extra = socket.socket(); extra.bind(("127.0.0.2", 0)); extra.connect(("127.0.0.1", \(port)))
            extra.settimeout(20)
            try:
                closed = extra.recv(1) == b""
            except ConnectionResetError:
                closed = True
            print("refused" if closed else "served", flush=True)
            time.sleep(300)
            """
        return try StreamingProcess("python3", ["-u", "-c", script])
    }

    /// operations.md: "from acceptance to the first write on the device's stream (online devices only)". A backlog
    /// written as the device comes online, or a message written again after a reconnection, is no sample: it would
    /// measure how long the device was away.
    @Test("send-to-deliver latency counts first writes to online devices only")
    func sendToDeliverOnlineOnly() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let count = { () async throws -> Double in
            OperationsTests.sample(
                "pushrelay_send_to_deliver_duration_seconds_count",
                in: try await OperationsTests.get("\(daemon.baseURL)/metrics").body) ?? 0
        }
        func send() async throws -> String {
            let body = #"{"to":"\#(device.token)","data":{"n":"1"}}"#
            return try messageID(ofSendResponse: try await daemon.send(body, serverKey: keys.serverKey).body)
        }
        let queued = try await send()
        try await Task.sleep(for: .milliseconds(300))  // the device was away
        let first = try daemon.openStream(secret: device.secret)
        _ = try await first.waitFor("the backlog") { parseEvents($0).contains { $0.id == queued } }
        #expect(try await count() == 0, "the backlog counted")
        let live = try await send()
        _ = try await first.waitFor("the live message") { parseEvents($0).contains { $0.id == live } }
        #expect(try await count() == 1)
        first.stop()
        // Nothing acknowledged: a new stream gets both again, and neither counts a second time.
        let second = try daemon.openStream(secret: device.secret)
        defer { second.stop() }
        _ = try await second.waitFor("the redelivery") { text in Set(parseEvents(text).compactMap(\.id)).isSuperset(of: [queued, live]) }
        #expect(try await count() == 1, "a redelivery counted")
        try await daemon.terminate()
    }

    @Test("every metric on the dashboard moves: sends, deliveries, acks, expiry, each drop reason, gauges, latencies, TLS, refused connections")
    func everyDashboardMetricMoves() async throws {
        var names = try Self.dashboardMetricNames()
        #expect(names.count >= 15, "names read from the dashboard: \(names.sorted())")
        // The SQLite WAL's gauge stays 0 on PostgreSQL (docs/operations.md); OperationsTests checks that.
        if E2EStore.current == .postgres { names.remove("pushrelay_store_wal_pages") }
        let pki = try await TestPKI()
        let daemon = try Daemon(arguments: [
            "--metrics-interval", "1s", "--purge-interval", "1s", "--max-connections-per-address", "3",
            "--listen-tls", "127.0.0.1:0", "--tls-cert", pki.certificateFile, "--tls-key", pki.keyFile,
        ])
        try await daemon.start()
        let metricsURL = "\(daemon.baseURL)/metrics"
        let baseline = Self.totals(try await OperationsTests.get(metricsURL).body)

        let keys = try await daemon.createProject()
        let online = try await daemon.registerDevice(keys)
        let offline = try await daemon.registerDevice(keys)
        let leaving = try await daemon.registerDevice(keys)
        func send(_ token: String, _ extra: String = "") async throws -> String {
            let body = #"{"to":"\#(token)","data":{"n":"1"}\#(extra)}"#
            return try messageID(ofSendResponse: try await daemon.send(body, serverKey: keys.serverKey).body)
        }

        // Accepted, delivered live (send-to-deliver latency), acknowledged; one rejected.
        let stream = try await daemon.openConnectedStream(secret: online.secret)
        defer { stream.stop() }
        let live = try await send(online.token)
        _ = try await stream.waitFor("the live message") { text in parseEvents(text).contains { $0.id == live } }
        let ack = try await run("curl", [
            "-sS", "-X", "POST", "\(daemon.baseURL)/v1/ack", "-H", "Authorization: Bearer \(online.secret)",
            "-H", "Content-Type: application/json", "--data-binary", #"{"ids":["\#(live)"]}"#, "-w", "%{http_code}",
        ])
        #expect(ack.stdout.hasSuffix("200"), "\(ack.stdout) \(ack.stderr)")
        #expect(try await daemon.send(#"{"to":"\#(offline.token)"}"#, serverKey: "wrong").status == 401)

        // Dropped, for each reason: a collapse key replaced, time to live 0 to a device with no stream, a device
        // unregistered with a message pending, 101 messages to one device (the 101st clears the 100).
        _ = try await send(offline.token, #","collapse_key":"score""#)
        _ = try await send(offline.token, #","collapse_key":"score""#)
        _ = try await send(offline.token, #","time_to_live":0"#)
        _ = try await send(leaving.token)
        let unregister = try await run("curl", [
            "-sS", "-X", "DELETE", "\(daemon.baseURL)/v1/register", "-H", "Authorization: Bearer \(leaving.secret)",
            "-w", "%{http_code}",
        ])
        #expect(unregister.stdout.hasSuffix("200"), "\(unregister.stdout) \(unregister.stderr)")
        let overflowing = try await daemon.registerDevice(keys)
        let url = "\(daemon.baseURL)/fcm/send"
        let overflow = try await run("curl", [
            "-sS", "-H", "Authorization: key=\(keys.serverKey)",
            "-H", "Content-Type: application/json", "--data-binary", #"{"to":"\#(overflowing.token)","data":{"n":"1"}}"#,
        ] + Array(repeating: url, count: 101))
        #expect(overflow.stdout.components(separatedBy: #""success":1"#).count - 1 == 101, "\(overflow.stderr)")
        // Expired: a one-second message to the device without a stream, purged after it lapses.
        _ = try await send(offline.token, #","time_to_live":1"#)

        // TLS: one handshake that completes, one that fails (plain HTTP on the TLS port).
        let tls = try await pki.curl(["-o", "/dev/null", "-w", "%{http_code}", "https://127.0.0.1:\(daemon.tlsPort)/healthz"])
        #expect(tls.stdout == "200", "\(tls.stderr)")
        _ = try await run("curl", ["-sS", "-m", "10", "http://127.0.0.1:\(daemon.tlsPort)/healthz"])

        // Connections: three held from another address, the fourth refused at accept.
        let holder = try Self.holdConnections(port: daemon.port, count: 3)
        defer { holder.stop() }
        let held = try await holder.waitFor("the fourth connection's fate") { $0.contains("refused") || $0.contains("served") }
        #expect(held.contains("refused"), "\(held)")

        // While the stream and the held connections are open, every dashboard metric has moved from the baseline
        // (gauges and the queue depth are refreshed every metrics_interval, the purge every purge_interval).
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(30)
        var unmoved = names
        var last: [String: Double] = [:]
        while !unmoved.isEmpty, clock.now < deadline {
            last = Self.totals(try await OperationsTests.get(metricsURL).body)
            unmoved = unmoved.filter { last[$0, default: 0] == baseline[$0, default: 0] }
            if !unmoved.isEmpty { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(unmoved.isEmpty, "never moved: \(unmoved.sorted()); last scrape: \(last.filter { $0.key.hasPrefix("pushrelay_") })")
        // Each drop reason, not only their sum.
        let text = try await OperationsTests.get(metricsURL).body
        for reason in ["collapsed", "ttl_zero", "unregistered", "overflow"] {
            let line = text.split(separator: "\n").first {
                $0.hasPrefix("pushrelay_messages_dropped_total{") && $0.contains(#"reason="\#(reason)""#)
            }
            let value = line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
            #expect(value >= (reason == "overflow" ? 100 : 1), "dropped{reason=\(reason)}: \(line ?? "absent")")
        }
        #expect(text.contains(#"pushrelay_connections_refused_total{reason="max_connections_per_address"} 1"#), "\(text)")
        #expect(OperationsTests.sample("pushrelay_open_connections", in: text).map { $0 >= 4 } == true, "\(text)")
    }
}
