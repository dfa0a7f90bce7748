import Foundation
import NIOConcurrencyHelpers
import PushRelayCore
import TestSupport
import Testing

@testable import PushRelayStore

/// The notification (`LISTEN`) connection only receives. Cut without a FIN or RST — a NAT or firewall that forgot an
/// idle connection, PostgreSQL restarted behind a partition — it waited for notifications for ever: the node's
/// streams got nothing more while every send went on being stored. The listener now asks PostgreSQL on it every
/// ``PostgresStore/Configuration/listenerProbeInterval`` and replaces it when it does not answer.
@Suite("PostgreSQL notification connection probe")
struct PostgresListenerProbeTests {
    /// A TCP relay to PostgreSQL (Python) that, on SIGUSR1, stops passing on anything over the connections open at
    /// that moment without closing them: a black hole. Connections opened later are relayed as before.
    static let relayScript = """
        import os, signal, socket, sys, threading
        target = ("127.0.0.1", int(sys.argv[1]))
        pairs = []
        def pump(src, dst, pair):
            try:
                while True:
                    data = src.recv(65536)
                    if not data:
                        break
                    if not pair["frozen"]:
                        dst.sendall(data)
            except OSError:
                pass
            if not pair["frozen"]:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
        def freeze(*_):
            for pair in list(pairs):
                pair["frozen"] = True
        signal.signal(signal.SIGUSR1, freeze)
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        with open(sys.argv[2] + ".tmp", "w") as f:
            f.write("%d\\n" % server.getsockname()[1])
        os.rename(sys.argv[2] + ".tmp", sys.argv[2])
        while True:
            client, _ = server.accept()
            upstream = socket.create_connection(target)
            pair = {"frozen": False}
            pairs.append(pair)
            threading.Thread(target=pump, args=(client, upstream, pair), daemon=True).start()
            threading.Thread(target=pump, args=(upstream, client, pair), daemon=True).start()
        """

    @Test("a notification connection that stops answering without closing is replaced: the next commit of another node arrives")
    func silentListenerIsReplaced() async throws {
        try await withTemporaryDirectory { directory in
            let postgres = try await TestPostgres.shared
            // Started with no signal blocked (`ChildProcess.configure`), so that SIGUSR1 and SIGKILL reach it; its
            // port comes through a file, read without blocking a thread of the pool.
            let portFile = directory + "/relay-port"
            let relay = Process()
            ChildProcess.configure(relay, "python3", ["-c", Self.relayScript, "\(postgres.port)", portFile])
            relay.standardOutput = FileHandle.nullDevice
            try relay.run()
            defer { kill(relay.processIdentifier, SIGKILL) }
            var port: Int?
            for _ in 0..<3_000 where port == nil {
                port = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap {
                    $0.hasSuffix("\n") ? Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) : nil
                }
                if port == nil { try await Task.sleep(for: .milliseconds(20)) }
            }
            let relayPort = try #require(port, "the relay wrote no port")
            try await withStore(.postgres, in: directory) { other in
                let project = try await other.createProject(name: "shop").project.id
                let device = try await other.registerDevice(project: project, app: "a", platform: "IOS").device.id
                let database = databaseName(for: directory)
                var configuration = PostgresStore.Configuration(
                    url: try PostgresURL("postgres://postgres@127.0.0.1:\(relayPort)/\(database)"))
                configuration.listenerProbeInterval = .seconds(1)
                configuration.readTimeout = .seconds(2)
                let node = try await PostgresStore.open(configuration: configuration)
                let seen = NIOLockedValueBox<[RemoteCommit]>([])
                node.setRemoteCommitObserver { commit in seen.withLockedValue { $0.append(commit) } }
                func waitFor(_ what: String, _ found: @escaping ([RemoteCommit]) -> Bool) async throws -> Bool {
                    for _ in 0..<3_000 {
                        if seen.withLockedValue({ found($0) }) { return true }
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    Issue.record("\(what) never arrived: \(seen.withLockedValue { $0 })")
                    return false
                }
                func body(_ commit: RemoteCommit) -> [[UInt8]] {
                    if case .rows(let rows) = commit { return rows.map(\.body) }
                    return []
                }

                _ = try await other.enqueue([NewMessage(device: device, body: [1])])
                guard try await waitFor("the first commit", { $0.contains { body($0) == [[1]] } }) else { return }

                // Every connection of the node through the relay goes silent, the notification connection among them.
                kill(relay.processIdentifier, SIGUSR1)
                guard try await waitFor("the new notification connection", { $0.contains(.unknown) }) else { return }
                _ = try await other.enqueue([NewMessage(device: device, body: [2])])
                #expect(try await waitFor("the commit after the cut", { $0.contains { body($0) == [[2]] } }))
                node.setRemoteCommitObserver(nil)
                await node.close()
            }
            kill(relay.processIdentifier, SIGKILL)
            await ChildProcess.waitForExit(relay)
        }
    }
}

