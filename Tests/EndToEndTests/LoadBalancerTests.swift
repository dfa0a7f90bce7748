import Foundation
import TestSupport
import Testing

/// Two nodes on one PostgreSQL behind nginx's stream module, configured from `deploy/nginx-stream.conf`: a device
/// that knows only the load balancer's address loses nothing when the node holding its stream is killed.
@Suite("Nodes behind a TCP load balancer (nginx stream)", .serialized, .tags(.endToEnd), .hangGuard)
struct LoadBalancerTests {
    /// nginx in the foreground on `port`, forwarding to `nodes`, with the shipped `stream {}` block; its directory.
    static func startNginx(port: Int, nodes: [Daemon]) async throws -> (StreamingProcess, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let shipped = try String(contentsOf: Self.repository.appendingPathComponent("deploy/nginx-stream.conf"), encoding: .utf8)
        var lines: [String] = []
        for line in shipped.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("server node-a.internal") {
                // The shipped upstream's node lines, one per test node, with the same parameters.
                let parameters = trimmed.split(separator: " ").dropFirst(2).joined(separator: " ")
                for node in nodes { lines.append("        server 127.0.0.1:\(node.port) \(parameters)") }
            } else if trimmed.hasPrefix("server node-") || trimmed == "listen [::]:443;" {
                continue
            } else if trimmed == "listen 443;" {
                lines.append("        listen 127.0.0.1:\(port);")
            } else {
                lines.append(line)
            }
        }
        let module = "/usr/lib/nginx/modules/ngx_stream_module.so"
        #expect(FileManager.default.fileExists(atPath: module), "libnginx-mod-stream is installed by scripts/setup.sh --test")
        let configuration = """
            load_module \(module);
            daemon off;
            pid \(directory.path)/nginx.pid;
            error_log \(directory.path)/error.log info;
            events { worker_connections 256; }
            \(lines.joined(separator: "\n"))
            """
        let file = directory.appendingPathComponent("nginx.conf")
        try configuration.write(to: file, atomically: true, encoding: .utf8)
        let check = try await run("nginx", ["-t", "-p", directory.path, "-c", file.path])
        #expect(check.status == 0, "nginx -t: \(check.stderr)\n\(configuration)")
        let nginx = try StreamingProcess("nginx", ["-p", directory.path, "-c", file.path])
        // Up when it accepts connections.
        for _ in 0..<100 {
            if try await run("curl", ["-sS", "-o", "/dev/null", "http://127.0.0.1:\(port)/healthz"]).status == 0 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return (nginx, directory)
    }

    static var repository: URL {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }

    /// Open device streams on a node, from its `/metrics`.
    static func openStreams(_ node: Daemon) async throws -> Int {
        let metrics = try await OperationsTests.get("\(node.baseURL)/metrics").body
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("pushrelay_open_streams ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }.map(Int.init) ?? 0
    }

    @Test("kill -9 of the node holding the stream behind nginx: pushrelay listen through the balancer gets all 30 messages once")
    func killTheStreamsNodeBehindNginx() async throws {
        let nodes = try await MultiNodeTests.nodes(2)
        let keys = try await nodes[0].createProject()
        let device = try await nodes[0].registerDevice(keys)
        let port = try TestPostgres.freePort()
        let (nginx, directory) = try await Self.startNginx(port: port, nodes: nodes)
        defer { nginx.stop() }
        let listener = try StreamingProcess(Daemon.binary, [
            "listen", "--server", "http://127.0.0.1:\(port)", "--secret", device.secret, "--json",
            "--count", "30", "--timeout", "90", "--heartbeat-timeout", "10",
        ])
        defer { listener.stop() }
        func ids(_ text: String) -> [String] {
            text.split(separator: "\n").compactMap { try? jsonObject(String($0))["message_id"] as? String }
        }
        var sent: [String] = []
        func send(_ range: Range<Int>, through node: Daemon) async throws {
            for n in range {
                let answer = try await node.send(#"{"to": "\#(device.token)", "data": {"n": "\#(n)"}}"#, serverKey: keys.serverKey)
                sent.append(try messageID(ofSendResponse: answer.body))
            }
        }
        try await send(0..<10, through: nodes[0])
        try await listener.waitFor(timeout: .seconds(60), "10 messages through nginx") { ids($0).count >= 10 }
        // The node nginx put the stream on dies; the other takes the rest.
        var holders: [Int] = []
        for (index, node) in nodes.enumerated() where try await Self.openStreams(node) == 1 { holders.append(index) }
        #expect(holders.count == 1, "exactly one node holds the stream: \(holders)")
        let holder = try #require(holders.first)
        let survivor = nodes[1 - holder]
        try await nodes[holder].kill9()
        try await send(10..<30, through: survivor)
        let status = await listener.waitForExit(timeout: .seconds(90))
        let received = ids(listener.text)
        let log = (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
        #expect(status == 0, "listen exit \(String(describing: status)); output:\n\(listener.text)\nnginx:\n\(log)")
        #expect(received.count == 30 && Set(received) == Set(sent), "received \(received.count), \(Set(received).count) distinct")
        _ = try await survivor.terminate()
    }
}
