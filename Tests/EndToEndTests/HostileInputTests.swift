import Foundation
import TestSupport
import Testing

/// Attacks on the application layer against the real daemon, each with a healthy client sending meanwhile
/// (``AttackProbe``): the daemon answers the attack with FCM's error, keeps serving, loses no accepted message,
/// and the test prints the healthy client's latency and the daemon's peak RSS (docs/operations.md, "Hostile input").
@Suite(.serialized, .tags(.endToEnd), .hangGuard) struct HostileInputTests {
    /// The condition that crashed the daemon (200,000 `!`), conditions nested past the bound within the length
    /// limit, and conditions past the length limit, 20 at a time: each is `InvalidParameters`, nothing crashes.
    @Test func hostileConditionsAreRefusedAndTheDaemonKeepsServing() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let probe = try await AttackProbe(daemon: daemon, keys: keys)
        probe.start()

        let attacks: [(name: String, condition: String, reason: String)] = [
            ("200,000 !", String(repeating: "!", count: 200_000) + "'a' in topics", "longer than 8192 bytes"),
            ("8,000 !", String(repeating: "!", count: 8000) + "'a' in topics", "nested deeper than 16 levels"),
            (
                "5,000 (", String(repeating: "(", count: 5000) + "'a' in topics" + String(repeating: ")", count: 5000),
                "longer than 8192 bytes"
            ),
            ("3,000 !(", String(repeating: "!(", count: 3000) + "'a' in topics", "nested deeper than 16 levels"),
            ("100 KB of spaces", String(repeating: " ", count: 100_000) + "'a' in topics", "longer than 8192 bytes"),
        ]
        let rounds = 10
        try await withThrowingTaskGroup(of: (String, Int, String, String).self) { group in
            for _ in 0..<rounds {
                for attack in attacks {
                    group.addTask {
                        let answer = try await daemon.send(
                            #"{"condition": "\#(attack.condition)", "data": {"k": "v"}}"#, serverKey: keys.serverKey)
                        return (attack.name, answer.status, answer.body, attack.reason)
                    }
                }
            }
            for try await (name, status, body, reason) in group {
                #expect(status == 400, "\(name): \(status) \(body.prefix(200))")
                #expect(body.contains("InvalidParameters"), "\(name): \(body.prefix(200))")
                #expect(body.contains(reason), "\(name): \(body.prefix(200))")
            }
        }

        await probe.stop()
        let report = probe.report
        print("hostile conditions (\(attacks.count * rounds) requests): \(report)")
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(daemon.process?.isRunning == true, "the daemon died: \(daemon.log)")
        // Still serving: a legitimate condition is accepted and every accepted probe message arrives.
        let legitimate = try await daemon.send(
            #"{"condition": "'a' in topics && !('b' in topics)", "data": {"k": "v"}}"#, serverKey: keys.serverKey)
        #expect(legitimate.status == 200, "\(legitimate.body)")
        try await probe.expectEveryAcceptedMessageDelivered()
        #expect(try await daemon.terminate() == 0)
    }

    /// 100 clients polling `/readyz` and `/metrics` in parallel (one curl with `--parallel-max 100`, rounds of 1,000
    /// requests) while a healthy client sends, over a store holding a few thousand messages: neither route reads
    /// the store, so the sends are not stalled, and both keep answering.
    @Test func parallelReadinessAndMetricsProbesDoNotStallSends() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        // Rows for a per-request count to scan: 2,000 queued messages over 20 devices.
        let loaded = try await daemon.registerDevices(keys, count: 20)
        let tokens = loaded.map { "\"\($0.token)\"" }.joined(separator: ",")
        for round in 0..<100 {
            let answer = try await daemon.send(
                #"{"registration_ids": [\#(tokens)], "data": {"fill": "\#(round)"}}"#, serverKey: keys.serverKey)
            #expect(answer.status == 200, "\(answer.body)")
        }
        let probe = try await AttackProbe(daemon: daemon, keys: keys)
        probe.start()
        var urls: [String] = []
        for index in 0..<1000 {
            urls += ["\(daemon.baseURL)/\(index.isMultiple(of: 2) ? "readyz" : "metrics")", "-o", "/dev/null"]
        }
        let rounds = 5
        var answered = 0
        for _ in 0..<rounds {
            let result = try await run(
                "curl", ["-sS", "--parallel", "--parallel-max", "100", "-w", "%{http_code}\n"] + urls)
            #expect(result.status == 0, "\(result.stderr)")
            let codes = result.stdout.split(separator: "\n")
            #expect(codes.count == 1000)
            #expect(codes.allSatisfy { $0 == "200" }, "\(Set(codes))")
            answered += codes.count
        }
        try await probe.finish("parallel /readyz and /metrics (\(answered) requests, 100 at a time)")
        // The queue-depth gauge comes from the periodic snapshot (taken at start and every 10 s), not per request.
        let metrics = try await run("curl", ["-sS", "\(daemon.baseURL)/metrics"])
        #expect(metrics.stdout.contains("pushrelay_queue_depth"), "\(metrics.stdout)")
        #expect(try await daemon.terminate() == 0)
    }

    /// A registration flood with the client key (it ships in every app): 2,000 `POST /v1/register` from one
    /// address (127.0.0.2, 50 at a time) against `registration_rate_per_address = 100`. The burst is registered,
    /// the rest answered `429 RESOURCE_EXHAUSTED` with `Retry-After` and registered nothing; a healthy client on
    /// another address (127.0.0.1) keeps sending, receiving and registering meanwhile.
    @Test func registrationFloodIsCutOffPerAddress() async throws {
        let daemon = try Daemon(arguments: ["--registration-rate-per-address", "100", "--registration-rate", "0"])
        try await daemon.start()
        let keys = try await daemon.createProject()
        let probe = try await AttackProbe(daemon: daemon, keys: keys)
        probe.start()
        let body = #"{"project":"\#(keys.project)","app":"flood","platform":"android"}"#
        // One curl, 50 transfers at a time; `--next` starts each transfer's own options.
        var arguments = ["--parallel", "--parallel-max", "50"]
        for index in 0..<2000 {
            arguments += (index == 0 ? [] : ["--next"]) + [
                "-sS", "--interface", "127.0.0.2", "-w", "%{http_code}\n", "-X", "POST", "\(daemon.baseURL)/v1/register", "-H", "Authorization: key=\(keys.clientKey)",
                "-H", "Content-Type: application/json", "--data-binary", body, "-o", "/dev/null",
            ]
        }
        let flood = try await run("curl", arguments)
        #expect(flood.status == 0, "\(flood.stderr)")
        let codes = flood.stdout.split(separator: "\n").map(String.init)
        let registered = codes.filter { $0 == "200" }.count
        let refused = codes.filter { $0 == "429" }.count
        print("registration flood: \(codes.count) attempts, \(registered) registered, \(refused) refused")
        #expect(codes.count == 2000)
        #expect(registered + refused == 2000, "\(Set(codes))")
        // The burst of 100, plus what refilled at 100 a minute while the flood ran (seconds).
        #expect(registered >= 100 && registered <= 130, "\(registered)")

        // The refusal as a client sees it (a token refills every 0.6 s: a few tries meet an empty bucket).
        var refusal = ""
        for _ in 0..<10 {
            refusal = try await run("curl", [
                "-sS", "-i", "--interface", "127.0.0.2", "-X", "POST", "\(daemon.baseURL)/v1/register",
                "-H", "Authorization: key=\(keys.clientKey)", "-H", "Content-Type: application/json",
                "--data-binary", body,
            ]).stdout
            if refusal.hasPrefix("HTTP/1.1 429") { break }
        }
        #expect(refusal.hasPrefix("HTTP/1.1 429"), "\(refusal)")
        #expect(refusal.lowercased().contains("retry-after: "), "\(refusal)")
        #expect(refusal.contains(#""error":"RESOURCE_EXHAUSTED""#), "\(refusal)")

        // Another address registers as usual, and the healthy client was served throughout.
        let device = try await daemon.registerDevice(keys)
        #expect(!device.token.isEmpty)
        try await probe.finish("registration flood, healthy client meanwhile")
        #expect(try await daemon.terminate() == 0)
    }

    /// Sends that announce a 400 KB body and send 16 KB of it: over HTTP/2 with a wrong key, with no key, and with
    /// the right key, on one connection; over HTTP/1.1 with a wrong key. Prints what came back as JSON.
    static let unauthenticatedBodies = #"""
        import json, socket, sys, time, h2.connection, h2.config, h2.events
        port, key = int(sys.argv[1]), sys.argv[2]
        s = socket.create_connection(("127.0.0.1", port))
        s.settimeout(10)
        c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        c.initiate_connection()
        for sid, auth in ((1, "key=wrong"), (3, None), (5, "key=" + key)):
            headers = [(":method", "POST"), (":path", "/fcm/send"), (":scheme", "http"), (":authority", "127.0.0.1"),
                       ("content-type", "application/json"), ("content-length", "400000")]
            if auth:
                headers.append(("authorization", auth))
            c.send_headers(sid, headers)
            c.send_data(sid, b" " * 16000)
        s.sendall(c.data_to_send())
        statuses, reset, deadline = {}, [], time.time() + 10
        while time.time() < deadline and not (1 in statuses and 3 in statuses and 1 in reset and 3 in reset):
            try:
                data = s.recv(65536)
            except socket.timeout:
                break
            if not data:
                break
            for event in c.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    statuses[event.stream_id] = dict(event.headers)[b":status"].decode()
                if isinstance(event, h2.events.StreamReset):
                    reset.append(event.stream_id)
            s.sendall(c.data_to_send())
        # The right key's stream is still waiting for its body: no answer yet.
        time.sleep(0.5)
        s.setblocking(False)
        try:
            for event in c.receive_data(s.recv(65536)):
                if isinstance(event, h2.events.ResponseReceived):
                    statuses[event.stream_id] = dict(event.headers)[b":status"].decode()
        except (BlockingIOError, socket.timeout):
            pass
        def post_part(head):
            """Sends an HTTP/1.1 head and 16 KB of its body; returns what came back and whether it was closed."""
            sock = socket.create_connection(("127.0.0.1", port))
            sock.settimeout(10)
            sock.sendall(head + b" " * 16000)
            answer = b""
            try:
                while True:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return answer, True
                    answer += chunk
            except socket.timeout:
                return answer, False
        answer, closed = post_part(b"POST /fcm/send HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: key=wrong\r\n"
                                   b"Content-Type: application/json\r\nContent-Length: 400000\r\n\r\n")
        # FCM HTTP v1 with an access token nobody issued.
        v1_answer, _ = post_part(b"POST /v1/projects/shop/messages:send HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                 b"Authorization: Bearer ya29.forged\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: 200000\r\n\r\n")
        print(json.dumps({"h2": {str(k): v for k, v in statuses.items()}, "h2_reset": reset,
                          "h1_status": answer.split(b"\r\n")[0].decode(), "h1_closed": closed,
                          "v1_status": v1_answer.split(b"\r\n")[0].decode(),
                          "v1_unauthenticated": b"UNAUTHENTICATED" in v1_answer}))
        """#

    /// The server key is checked from the headers before the body is read (issue 12): a send with a wrong or no
    /// key is answered `401` after 16 KB of a 400 KB body, and the rest of the body is refused (HTTP/2: the stream
    /// is reset; HTTP/1.1: the connection closes), while a send with the right key on the same connection waits for
    /// its body as usual. The body of a client without a key is never buffered whole.
    @Test func unauthenticatedBodiesAreRefusedBeforeTheyAreRead() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let result = try await run("python3", ["-c", Self.unauthenticatedBodies, "\(daemon.port)", keys.serverKey])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try jsonObject(result.stdout)
        let h2 = try #require(json["h2"] as? [String: String], "\(result.stdout)")
        #expect(h2["1"] == "401", "wrong key: \(json)")
        #expect(h2["3"] == "401", "no key: \(json)")
        #expect(h2["5"] == nil, "the right key's send waits for its body: \(json)")
        let reset = json["h2_reset"] as? [Int] ?? []
        #expect(reset.contains(1) && reset.contains(3), "the rest of a refused body is not wanted: \(json)")
        #expect(json["h1_status"] as? String == "HTTP/1.1 401 Unauthorized", "\(json)")
        #expect(json["h1_closed"] as? Bool == true, "HTTP/1.1 closes after a refusal it did not read: \(json)")
        #expect(json["v1_status"] as? String == "HTTP/1.1 401 Unauthorized", "HTTP v1: \(json)")
        #expect(json["v1_unauthenticated"] as? Bool == true, "in Google's error form: \(json)")
        // Still serving.
        let device = try await daemon.registerDevice(keys)
        #expect(try await daemon.send(#"{"to": "\#(device.token)", "data": {"k": "v"}}"#, serverKey: keys.serverKey).status == 200)
        #expect(try await daemon.terminate() == 0)
    }

    /// `metrics_enabled = false`: `/metrics` does not exist (404) while `/readyz` still answers.
    @Test func metricsDisabledRemovesTheRoute() async throws {
        let daemon = try Daemon(arguments: ["--metrics-enabled", "false"])
        try await daemon.start()
        let metrics = try await run("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "\(daemon.baseURL)/metrics"])
        #expect(metrics.stdout == "404")
        let ready = try await run("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "\(daemon.baseURL)/readyz"])
        #expect(ready.stdout == "200")
        #expect(try await daemon.terminate() == 0)
    }

    /// `registration_ids` with 999 copies of one token and one other (it made a copy of the message per entry): the
    /// answer has 1,000 results, one message id for the 999, and the device receives the message once.
    @Test func duplicateRegistrationIDsAreSentOnce() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let other = try await daemon.registerDevice(keys)
        let tokens = Array(repeating: "\"\(device.token)\"", count: 999) + ["\"\(other.token)\""]
        let answer = try await daemon.send(
            #"{"registration_ids": [\#(tokens.joined(separator: ","))], "data": {"k": "v"}}"#, serverKey: keys.serverKey)
        #expect(answer.status == 200, "\(answer.body)")
        let json = try jsonObject(answer.body)
        let results = try #require(json["results"] as? [[String: Any]])
        #expect(results.count == 1000)
        #expect(json["success"] as? Int == 1000)
        let ids = Set(results.prefix(999).compactMap { $0["message_id"] as? String })
        #expect(ids.count == 1, "\(ids.count) distinct message ids for one token")
        let otherID = try #require(results.last?["message_id"] as? String)
        #expect(!ids.contains(otherID))
        // The device's queue holds the message once: a marker sent after it is the second and last event.
        let marker = try messageID(ofSendResponse: try await daemon.send(
            #"{"to": "\#(device.token)", "data": {"marker": "1"}}"#, serverKey: keys.serverKey).body)
        let stream = try daemon.openStream(secret: device.secret)
        defer { stream.stop() }
        let text = try await stream.waitFor("the marker") { $0.contains(marker) }
        #expect(parseEvents(text).count == 2, "\(parseEvents(text).count) events: \(text.prefix(500))")
        #expect(try await daemon.terminate() == 0)
    }
}
