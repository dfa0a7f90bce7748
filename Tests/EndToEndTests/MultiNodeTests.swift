import Foundation
import TestSupport
import Testing

/// Three daemons on one PostgreSQL database (the throwaway test cluster): every node serves every route, a device's
/// stream may sit on any node, and what one node commits reaches the others through `NOTIFY`.
@Suite("Several nodes on one PostgreSQL", .tags(.endToEnd), .hangGuard)
struct MultiNodeTests {
    /// `count` started daemons on `url`, or on a fresh database, with `arguments` added.
    static func nodes(_ count: Int = 3, url: String? = nil, arguments: [String] = []) async throws -> [Daemon] {
        let url = if let url { url } else { try await TestPostgres.shared.freshDatabase("nodes") }
        var daemons: [Daemon] = []
        for _ in 0..<count {
            let daemon = try Daemon(arguments: ["--store", "postgres", "--postgres-url", url] + arguments)
            try await daemon.start()
            daemons.append(daemon)
        }
        return daemons
    }

    @Test("register on node A, stream on node B, send on node C: delivered (send→receive time printed)")
    func crossNodeDelivery() async throws {
        let nodes = try await Self.nodes()
        let (a, b, c) = (nodes[0], nodes[1], nodes[2])
        let keys = try await a.createProject()
        let device = try await a.registerDevice(keys)
        let stream = try await b.openConnectedStream(secret: device.secret, timeout: .seconds(30))
        defer { stream.stop() }
        var ids: [String] = []
        for round in 0..<3 {
            let start = ContinuousClock.now
            let answer = try await c.send(scenarioBody.replacingOccurrences(of: "TOKEN", with: device.token),
                                          serverKey: keys.serverKey)
            #expect(answer.status == 200, "\(answer.body)")
            let id = try messageID(ofSendResponse: answer.body)
            ids.append(id)
            try await stream.waitFor(timeout: .seconds(30), "message \(id) on node B") { $0.contains("id: \(id)") }
            let elapsed = ContinuousClock.now - start
            print("multi-node: send on C -> event on B, round \(round): \(elapsed) (curl start included)")
        }
        let events = parseEvents(stream.text)
        #expect(events.compactMap(\.id) == ids)
        for node in nodes { _ = try await node.terminate() }
    }

    @Test("a device's stream opened on another node ends its older stream, as on one node; the newer one delivers")
    func newerStreamOnAnotherNodeEndsTheOlder() async throws {
        let nodes = try await Self.nodes(2)
        let (a, b) = (nodes[0], nodes[1])
        let keys = try await a.createProject()
        let device = try await a.registerDevice(keys)
        let older = try await a.openConnectedStream(
            secret: device.secret, timeout: .seconds(30), "the stream on node A to open")
        defer { older.stop() }
        let newer = try await b.openConnectedStream(
            secret: device.secret, timeout: .seconds(30), "the stream on node B to open")
        defer { newer.stop() }
        // The older stream's response ends (curl exits), well before any heartbeat or idle timeout would end it.
        #expect(await older.waitForExit(timeout: .seconds(30)) != nil, "the stream on node A is still open")
        let answer = try await a.send(scenarioBody.replacingOccurrences(of: "TOKEN", with: device.token),
                                      serverKey: keys.serverKey)
        #expect(answer.status == 200, "\(answer.body)")
        let id = try messageID(ofSendResponse: answer.body)
        try await newer.waitFor(timeout: .seconds(30), "message \(id) on node B") { $0.contains("id: \(id)") }
        #expect(!older.text.contains("id: \(id)"))
        // And back: a stream opened on A again ends B's.
        let third = try await a.openConnectedStream(
            secret: device.secret, timeout: .seconds(30), "the second stream on node A to open")
        defer { third.stop() }
        #expect(await newer.waitForExit(timeout: .seconds(30)) != nil, "the stream on node B is still open")
        let again = try await b.send(scenarioBody.replacingOccurrences(of: "TOKEN", with: device.token),
                                     serverKey: keys.serverKey)
        let secondID = try messageID(ofSendResponse: again.body)
        try await third.waitFor(timeout: .seconds(30), "message \(secondID) on node A") { $0.contains("id: \(secondID)") }
        for node in nodes { _ = try await node.terminate() }
    }

    @Test("kill -9 of the node holding the stream: pushrelay listen with two --server fails over and gets every message exactly once")
    func listenerFailsOverAfterKill9() async throws {
        let nodes = try await Self.nodes(2)
        let (a, b) = (nodes[0], nodes[1])
        let keys = try await a.createProject()
        let device = try await a.registerDevice(keys)
        // B first: the listener streams from B until B dies, then from A.
        let listener = try StreamingProcess(Daemon.binary, [
            "listen", "--server", b.baseURL, "--server", a.baseURL, "--secret", device.secret, "--json",
            "--count", "30", "--timeout", "90", "--heartbeat-timeout", "10",
        ])
        defer { listener.stop() }
        func ids(_ text: String) -> [String] {
            text.split(separator: "\n").compactMap { try? jsonObject(String($0))["message_id"] as? String }
        }
        var sent: [String] = []
        for n in 0..<10 {
            let answer = try await a.send(#"{"to": "\#(device.token)", "data": {"n": "\#(n)"}}"#, serverKey: keys.serverKey)
            sent.append(try messageID(ofSendResponse: answer.body))
        }
        try await listener.waitFor(timeout: .seconds(60), "10 messages through node B") { ids($0).count >= 10 }
        try await b.kill9()
        // Sent while the listener has no stream: queued in PostgreSQL, delivered once it streams from A.
        for n in 10..<30 {
            let answer = try await a.send(#"{"to": "\#(device.token)", "data": {"n": "\#(n)"}}"#, serverKey: keys.serverKey)
            sent.append(try messageID(ofSendResponse: answer.body))
        }
        let status = await listener.waitForExit(timeout: .seconds(90))
        let received = ids(listener.text)
        #expect(status == 0, "listen exit \(String(describing: status)); output:\n\(listener.text)")
        #expect(received.count == 30 && Set(received) == Set(sent), "received \(received.count), \(Set(received).count) distinct")
        _ = try await a.terminate()
    }

    /// Sends to one token until the file `stop` exists (two minutes at most), round robin over `bases`, one
    /// connection per node, one request at a time. A send that gets no answer (the node is restarting) or
    /// `503 Unavailable` with `Retry-After` (it drains) goes to the next node; any other refusal is printed to
    /// standard error. Prints `{"first_accepted": id}` once a send is accepted, and at the end the accepted message
    /// ids as a JSON list and how many sends found no node.
    static let rollingSender = #"""
        import json, os, sys, time, httpx
        bases, key, token, stop = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
        clients = [httpx.Client(base_url=b, timeout=5) for b in bases]
        accepted, unanswered, n, i = [], 0, 0, 0
        end = time.monotonic() + 120
        while time.monotonic() < end and not os.path.exists(stop):
            n += 1
            body = {"to": token, "data": {"n": str(n)}}
            for attempt in range(len(clients)):
                client = clients[i % len(clients)]
                i += 1
                try:
                    r = client.post("/fcm/send", json=body, headers={"Authorization": "key=" + key})
                except httpx.HTTPError:
                    continue
                if r.status_code == 503 and r.headers.get("retry-after"):
                    continue  # a draining node: Unavailable, as it should; the next node takes the send
                result = r.json()["results"][0] if r.status_code == 200 else {}
                if "message_id" in result:
                    accepted.append(result["message_id"])
                    if len(accepted) == 1:
                        print(json.dumps({"first_accepted": accepted[0]}), flush=True)
                    break
                print(json.dumps({"refused": r.status_code, "body": r.text}), file=sys.stderr)
            else:
                unanswered += 1
                time.sleep(0.05)
        print(json.dumps({"accepted": accepted, "unanswered": unanswered}))
        """#

    @Test("a rolling restart of every node under load: every accepted message reaches the listener once")
    func rollingRestartUnderLoad() async throws {
        // One device takes the whole load: no per-device rate, and room for what piles up while its stream moves
        // from a stopped node to the next (past 100 pending, FCM's rule would collapse them into deleted_messages).
        let nodes = try await Self.nodes(
            3, arguments: ["--device-message-rate", "0", "--max-pending-messages", "100000"])
        let keys = try await nodes[0].createProject()
        let device = try await nodes[0].registerDevice(keys)
        let listener = try StreamingProcess(Daemon.binary, [
            "listen", "--secret", device.secret, "--json", "--heartbeat-timeout", "5",
        ] + nodes.flatMap { ["--server", $0.baseURL] })
        defer { listener.stop() }
        let bases = "[" + nodes.map { "\"\($0.baseURL)\"" }.joined(separator: ",") + "]"
        let stop = FileManager.default.temporaryDirectory.appendingPathComponent("stop-\(UUID().uuidString)").path
        let sender = try StreamingProcess(
            "python3", ["-c", Self.rollingSender, bases, keys.serverKey, device.token, stop], standardError: true)
        defer { sender.stop() }
        // The load is on before the first node stops (a stalled machine can take seconds to start Python).
        try await sender.waitFor(timeout: .seconds(60), "the sender's first accepted send") {
            $0.contains("{\"first_accepted\"")
        }
        // One node after the other: SIGTERM (the drain answers what it has read), then back on the same port.
        try await Task.sleep(for: .seconds(1))
        for node in nodes {
            node.sendTerminate()
            let exit = try await node.waitForExit()
            #expect(exit?.status == 0, "\(exit?.log ?? "no exit")")
            try await node.start()
            try await Task.sleep(for: .seconds(1))
        }
        _ = FileManager.default.createFile(atPath: stop, contents: nil)
        #expect(await sender.waitForExit(timeout: .seconds(60)) == 0, "\(sender.text)")
        let summary = sender.text.split(separator: "\n").last { $0.hasPrefix("{\"accepted\"") }.map(String.init) ?? ""
        let result = try jsonObject(summary)
        let refusals = sender.text.split(separator: "\n").filter { $0.hasPrefix("{\"refused\"") }
        #expect(refusals.isEmpty, "a node answered a send with an error instead of accepting it: \(refusals.prefix(5))")
        let accepted = try #require(result["accepted"] as? [String])
        #expect(!accepted.isEmpty, "the sender never got a send accepted")
        func received(_ text: String) -> [String] {
            text.split(separator: "\n").compactMap { try? jsonObject(String($0))["message_id"] as? String }
        }
        try await listener.waitFor(timeout: .seconds(60), "every accepted message") { text in
            Set(accepted).isSubset(of: Set(received(text)))
        }
        let ids = received(listener.text)
        #expect(Set(ids).count == ids.count, "a message twice: \(ids.count) printed, \(Set(ids).count) distinct")
        print("rolling restart: \(accepted.count) sends accepted, \(result["unanswered"] ?? 0) found no node, \(ids.count) received")
        for node in nodes { _ = try await node.terminate() }
    }

    @Test("a topic message sent on one node reaches subscribers streaming on the others")
    func topicAcrossNodes() async throws {
        let nodes = try await Self.nodes()
        let keys = try await nodes[0].createProject()
        let devices = [try await nodes[1].registerDevice(keys), try await nodes[2].registerDevice(keys)]
        let list = devices.map { "\"\($0.token)\"" }.joined(separator: ",")
        let subscribed = try await run("curl", [
            "-sS", "-X", "POST", "\(nodes[0].baseURL)/iid/v1:batchAdd", "-H", "Authorization: key=\(keys.serverKey)",
            "-H", "Content-Type: application/json", "--data-binary", #"{"to": "/topics/news", "registration_tokens": [\#(list)]}"#,
        ])
        #expect(subscribed.status == 0 && subscribed.stdout.contains("results"), "\(subscribed.stdout)")
        var streams: [StreamingProcess] = []
        defer { for stream in streams { stream.stop() } }
        for (device, node) in zip(devices, [nodes[1], nodes[2]]) {
            streams.append(try await node.openConnectedStream(secret: device.secret, timeout: .seconds(30)))
        }
        let answer = try await nodes[0].send(#"{"to": "/topics/news", "data": {"headline": "cross-node"}}"#,
                                             serverKey: keys.serverKey)
        #expect(answer.status == 200, "\(answer.body)")
        for stream in streams {
            try await stream.waitFor(timeout: .seconds(30), "the topic message") { $0.contains("cross-node") }
        }
        for node in nodes { _ = try await node.terminate() }
    }

    @Test("a key rotated through the CLI stops working on every node; the new key works on every node")
    func keyRotationSeenByEveryNode() async throws {
        let nodes = try await Self.nodes()
        let keys = try await nodes[0].createProject()
        let device = try await nodes[0].registerDevice(keys)
        let body = scenarioBody.replacingOccurrences(of: "TOKEN", with: device.token)
        for node in nodes {  // every node caches the old key
            #expect(try await node.send(body, serverKey: keys.serverKey).status == 200)
        }
        let rotated = try await Daemon.cli(
            ["project", "rotate-key", keys.project, "--grace-seconds", "0", "--json", "--data-dir", nodes[0].dataDir.path]
                + nodes[0].storeArguments)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let newKey = try jsonObject(rotated.stdout)["server_key"] as? String ?? ""
        for node in nodes {
            // Eventually, not at once: the CLI's notification is heard asynchronously (bounded wait).
            var status = 0
            for _ in 0..<300 {
                status = try await node.send(body, serverKey: keys.serverKey).status
                if status == 401 { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(status == 401)
            #expect(try await node.send(body, serverKey: newKey).status == 200)
        }
        for node in nodes { _ = try await node.terminate() }
    }
}

/// PostgreSQL stopped under a node and started again, on a cluster of the test's own.
@Suite("A node while PostgreSQL is down", .tags(.endToEnd), .hangGuard)
struct PostgresOutageTests {
    /// A node on a database of a cluster of the test's own, with a project and a device; `body` sends the scenario
    /// to that device.
    struct Node {
        let cluster: TestPostgres
        let daemon: Daemon
        let keys: ProjectKeys
        let device: DeviceKeys
        let body: String

        init(database: String) async throws {
            cluster = try await TestPostgres.start()
            let url = try await cluster.database(named: database)
            daemon = try Daemon(arguments: ["--store", "postgres", "--postgres-url", url, "--metrics-interval", "1s"])
            try await daemon.start()
            keys = try await daemon.createProject()
            device = try await daemon.registerDevice(keys)
            body = scenarioBody.replacingOccurrences(of: "TOKEN", with: device.token)
        }

        /// Sends until one is accepted (the node reconnects by itself: a bounded wait, no fixed sleep); its id.
        func sendUntilAccepted() async throws -> String? {
            for _ in 0..<300 {
                let answer = try await daemon.send(body, serverKey: keys.serverKey)
                if answer.status == 200 { return try messageID(ofSendResponse: answer.body) }
                try await Task.sleep(for: .milliseconds(100))
            }
            return nil
        }
    }

    @Test("sends answer Unavailable with Retry-After while PostgreSQL is down; after it is back the node accepts again, and nothing accepted before is lost")
    func outage() async throws {
        let node = try await Node(database: "outage")
        let (cluster, daemon, keys, device, body) = (node.cluster, node.daemon, node.keys, node.device, node.body)
        var accepted: [String] = []
        for _ in 0..<5 {
            let answer = try await daemon.send(body, serverKey: keys.serverKey)
            #expect(answer.status == 200)
            accepted.append(try messageID(ofSendResponse: answer.body))
        }

        try await cluster.stop()
        let result = try await run("curl", [
            "-sS", "-i", "--http1.1", "-X", "POST", "\(daemon.baseURL)/fcm/send", "-H", "Authorization: key=\(keys.serverKey)",
            "-H", "Content-Type: application/json", "--data-binary", body, "--max-time", "60",
        ])
        #expect(result.stdout.contains(" 503") || result.stdout.contains("Unavailable"), "\(result.stdout)")
        #expect(result.stdout.lowercased().contains("retry-after:"), "\(result.stdout)")
        // Out of a load balancer's rotation while it cannot commit, back in by itself once PostgreSQL is.
        let down = try await StoreFaultTests.waitForReadiness(daemon, 503)
        #expect(down.status == 503 && down.body.contains("store") && down.body.contains(#""reason":"#), "\(down)")

        try await cluster.restart()
        let up = try await StoreFaultTests.waitForReadiness(daemon, 200)
        #expect(up.status == 200, "\(up)")
        let later = try await node.sendUntilAccepted()
        #expect(later != nil)
        accepted += later.map { [$0] } ?? []
        let stream = try daemon.openStream(secret: device.secret)
        defer { stream.stop() }
        let last = try #require(accepted.last)
        try await stream.waitFor(timeout: .seconds(30), "every accepted message") { $0.contains("id: \(last)") }
        #expect(parseEvents(stream.text).compactMap(\.id) == accepted)
        _ = try await daemon.terminate()
        try await cluster.stop()
    }

    /// PostgreSQL that stops answering without closing its connections (every server process stopped: a network
    /// black hole looks the same): sends answer Unavailable with Retry-After (the writer drops a connection that
    /// does not commit within its commit timeout) instead of hanging until the request timeout, `/readyz` fails
    /// (reads give up after their timeout), and the node recovers by itself when PostgreSQL answers again.
    @Test("sends answer Unavailable and /readyz fails while PostgreSQL does not answer at all; then the node recovers")
    func unresponsive() async throws {
        let node = try await Node(database: "frozen")
        let (cluster, daemon, keys, body) = (node.cluster, node.daemon, node.keys, node.body)
        #expect(try await daemon.send(body, serverKey: keys.serverKey).status == 200)

        let postmaster = try String(contentsOfFile: cluster.directory + "/data/postmaster.pid", encoding: .utf8)
            .split(separator: "\n").first.map(String.init) ?? ""
        let children = try await run("pgrep", ["-P", postmaster]).stdout.split(separator: "\n").map(String.init)
        let processes = ([postmaster] + children).compactMap { pid_t($0) }
        #expect(processes.count > 1, "postmaster \(postmaster), children \(children)")
        for process in processes { kill(process, SIGSTOP) }
        let frozen = try await run("curl", [
            "-sS", "-i", "--http1.1", "-X", "POST", "\(daemon.baseURL)/fcm/send", "-H", "Authorization: key=\(keys.serverKey)",
            "-H", "Content-Type: application/json", "--data-binary", body, "--max-time", "60",
        ])
        let down = try await StoreFaultTests.waitForReadiness(daemon, 503)
        for process in processes { kill(process, SIGCONT) }
        #expect(frozen.stdout.hasPrefix("HTTP/1.1 503"), "\(frozen.stdout)")
        #expect(frozen.stdout.lowercased().contains("retry-after:"), "\(frozen.stdout)")
        #expect(down.status == 503 && down.body.contains(#""reason":"#), "\(down)")

        let up = try await StoreFaultTests.waitForReadiness(daemon, 200)
        #expect(up.status == 200, "\(up)")
        #expect(try await node.sendUntilAccepted() != nil)
        _ = try await daemon.terminate()
        try await cluster.stop()
    }
}
