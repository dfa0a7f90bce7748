import Foundation
import TestSupport
import Testing

/// `postgres_connect_timeout`, `postgres_read_timeout` and `postgres_read_connections`, each by its effect on real
/// daemons (they were fixed at 5 s, 5 s and 4 in the store's defaults), and `postgres_statement_timeout` as
/// PostgreSQL's bound on a frozen node's transaction. No figure of wall time is asserted: each test shows which of
/// two daemons, or two requests, is answered first, or how a request is answered while a `psql` session holds a lock.
extension SettingsEffectTests {
    /// A TCP server (Python) that accepts every connection and never says anything: a PostgreSQL that stopped
    /// answering without closing its socket. Returns the process and its port.
    static func silentServer() async throws -> (StreamingProcess, Int) {
        let script = """
            import socket, sys
            s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
            print(s.getsockname()[1], flush=True)
            held = []
            while True:
                held.append(s.accept()[0])
            """
        let server = try StreamingProcess("python3", ["-c", script])
        let text = try await server.waitFor("the silent server's port") { $0.hasSuffix("\n") }
        guard let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw DaemonError(message: "the silent server printed no port: \(text)")
        }
        return (server, port)
    }

    /// `postgres_connect_timeout` bounds the whole opening of a connection, the login included. Two daemons start
    /// at once against a server that accepts and never answers: the one with 1 s exits with status 69 and says it
    /// cannot connect while the one with 120 s is still waiting (with the default 5 s on both, both would give up
    /// after 5 s; without a bound on the login, neither would).
    @Test func postgresConnectTimeoutBoundsTheLogin() async throws {
        let (server, port) = try await Self.silentServer()
        defer { server.stop() }
        func daemon(_ timeout: String) throws -> StreamingProcess {
            try StreamingProcess(Daemon.binary, [
                "serve", "--listen", "127.0.0.1:0", "--store", "postgres",
                "--postgres-url", "postgres://relay@127.0.0.1:\(port)/relay", "--postgres-connect-timeout", timeout,
            ], standardError: true)
        }
        let patient = try daemon("120s")
        defer { kill(patient.process.processIdentifier, SIGKILL) }
        let quick = try daemon("1s")
        defer { kill(quick.process.processIdentifier, SIGKILL) }
        let status = await quick.waitForExit(timeout: .seconds(60))
        #expect(status == 69, "\(quick.text)")
        #expect(quick.text.contains("cannot open the store: unavailable: cannot connect to postgres://"), "\(quick.text)")
        #expect(patient.process.isRunning, "the daemon with a 120 s connect timeout gave up first: \(patient.text)")
        #expect(!patient.text.contains("listening on"), "\(patient.text)")
    }

    /// A `psql` session that holds `LOCK TABLE devices IN ACCESS EXCLUSIVE MODE` until `ROLLBACK`: every read of a
    /// device that memory cannot answer waits on it.
    static func lockDevices(_ postgres: TestPostgres, database: String, name: String) async throws -> PSQLSession {
        let session = try postgres.session(database: database, name: name)
        try session.send("BEGIN; LOCK TABLE devices IN ACCESS EXCLUSIVE MODE;")
        #expect(try await postgres.waitForActivity(
            database: database, "application_name = '\(name)' AND state = 'idle in transaction'"))
        return session
    }

    /// `postgres_read_timeout` bounds a read that waits. While the devices table is locked, a send to a token
    /// neither node has looked up goes first through the node with 60 s, and once its read has waited more than
    /// 2 s, another through a node with the default (5 s): the second is answered `Unavailable` while the first is
    /// still waiting (with the default on both, the first would have been answered first), and the first is
    /// delivered once the lock is let go.
    @Test func postgresReadTimeoutBoundsAWaitingRead() async throws {
        let postgres = try await TestPostgres.shared
        let (database, url) = try await postgres.namedFreshDatabase("readtimeout")
        let patient = try Daemon(arguments: [
            "--store", "postgres", "--postgres-url", url + "?application_name=patient_node", "--postgres-read-timeout", "60s",
        ])
        let standard = try Daemon(arguments: ["--store", "postgres", "--postgres-url", url])
        try await patient.start()
        try await standard.start()
        let keys = try await patient.createProject()
        let devices = try await patient.registerDevices(keys, count: 3)
        func body(_ index: Int) -> String { #"{"to": "\#(devices[index].token)", "data": {"k": "v"}}"# }
        // The server key read before the lock, through each node.
        #expect(try await patient.send(body(0), serverKey: keys.serverKey).status == 200)
        #expect(try await standard.send(body(0), serverKey: keys.serverKey).status == 200)

        let held = try await Self.lockDevices(postgres, database: database, name: "held_devices")
        let answered = AnsweredFlag()
        let waiting = Task {
            defer { answered.set() }
            return try await patient.send(body(1), serverKey: keys.serverKey)
        }
        #expect(try await postgres.waitForActivity(
            database: database,
            "application_name = 'patient_node' AND wait_event_type = 'Lock' AND now() - query_start > interval '2 seconds'"),
            "the send through the node with 60 s did not wait on the lock")
        let refused = try await standard.send(body(2), serverKey: keys.serverKey)
        #expect(refused.status == 503 && refused.body.contains("Unavailable"), "\(refused)")
        #expect(!answered.isSet, "the read under 60 s, which waited longer, was answered first")
        try held.send("ROLLBACK;")
        _ = await held.finish()
        let stored = try await waiting.value
        #expect(stored.status == 200 && stored.body.contains(#""success":1"#), "\(stored)")
        #expect(try await patient.terminate() == 0)
        #expect(try await standard.terminate() == 0)
    }

    /// The backends of `database` waiting on a lock, each with the start of the statement it waits in.
    static func lockWaiters(_ postgres: TestPostgres, database: String) async throws -> [String: String] {
        let rows = try await postgres.psql(
            "SELECT pid, query_start FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
            database: database
        ).stdout.split(separator: "\n")
        var waiters: [String: String] = [:]
        for row in rows {
            let columns = row.split(separator: "|", maxSplits: 1)
            if columns.count == 2 { waiters[String(columns[0])] = String(columns[1]) }
        }
        return waiters
    }

    /// `postgres_read_connections` bounds the read pool. While the devices table is locked, each node sends to a
    /// token it has not looked up: the read takes a pool connection and waits on the lock (PostgreSQL ends it at
    /// the read timeout, 20 s here). Then a send with a second project's server key, which the node has not looked
    /// up either (a read of the projects, not locked), to a malformed token. With two connections that read has its
    /// own: answered `InvalidRegistration` while the first still waits. With one it has to wait for the first's
    /// connection: answered only once the statement the first waits in has ended (with the setting ignored, the
    /// default four, it is answered while that statement still waits). No figure of time: the order of the answer
    /// and of the waiting statement's end, as PostgreSQL shows it.
    ///
    /// The statistics (`metrics_interval`) are read once an hour: their read counts the devices, and one falling
    /// while the lock is held takes a connection of its own (that made the two-connection node answer `Unavailable`
    /// in CI's full runs, CI108–CI110, where the test ran slower).
    @Test func postgresReadConnectionsBoundThePool() async throws {
        let postgres = try await TestPostgres.shared
        let (database, url) = try await postgres.namedFreshDatabase("readpool")
        let store = [
            "--store", "postgres", "--postgres-url", url, "--postgres-read-timeout", "20s", "--metrics-interval", "1h",
        ]
        let single = try Daemon(arguments: store + ["--postgres-read-connections", "1"])
        let double = try Daemon(arguments: store + ["--postgres-read-connections", "2"])
        try await single.start()
        try await double.start()
        let keys = try await single.createProject()
        let other = try await single.createProject("other")
        let devices = try await single.registerDevices(keys, count: 3)
        func body(_ index: Int) -> String { #"{"to": "\#(devices[index].token)", "data": {"k": "v"}}"# }
        let malformed = #"{"to": "not a token", "data": {"k": "v"}}"#
        #expect(try await single.send(body(0), serverKey: keys.serverKey).status == 200)
        #expect(try await double.send(body(0), serverKey: keys.serverKey).status == 200)

        let held = try await Self.lockDevices(postgres, database: database, name: "held_pool")
        var blocked: [Task<(status: Int, body: String), any Error>] = []
        for (node, index) in [(double, 1), (single, 2)] {
            let before = try await Self.lockWaiters(postgres, database: database)
            blocked.append(Task { try await node.send(body(index), serverKey: keys.serverKey) })
            // This node's read holds one of its connections, waiting on the lock.
            var waiter: (pid: String, start: String)?
            for _ in 0..<3_000 where waiter == nil {
                waiter = try await Self.lockWaiters(postgres, database: database)
                    .first { before[$0.key] == nil }.map { (pid: $0.key, start: $0.value) }
                if waiter == nil { try await Task.sleep(for: .milliseconds(20)) }
            }
            let waiting = try #require(waiter, "the send to an unread token did not wait on the lock")
            let answered = try await node.send(malformed, serverKey: other.serverKey)
            let stillWaiting = try await Self.lockWaiters(postgres, database: database)[waiting.pid] == waiting.start
            if node === double {
                #expect(answered.status == 200 && answered.body.contains("InvalidRegistration"), "\(answered)")
                #expect(stillWaiting, "answered only once the other read had ended: \(answered)")
            } else {
                // Answered as soon as the connection came back (200), or at its own deadline (503).
                #expect([200, 503].contains(answered.status), "\(answered)")
                #expect(!stillWaiting, "answered while the read on its one connection still waited: \(answered)")
            }
            #expect(try await postgres.waitForActivity(
                database: database, "application_name = 'held_pool' AND state = 'idle in transaction'"),
                "the lock was let go before the answers")
        }
        try held.send("ROLLBACK;")
        _ = await held.finish()
        // Each blocked send was answered Unavailable at its deadline, or delivered once the lock was gone.
        for task in blocked {
            let answer = try await task.value
            #expect([200, 503].contains(answer.status), "\(answer)")
        }
        // Answered as the pool allows once the lock is gone.
        #expect(try await single.send(body(1), serverKey: keys.serverKey).status == 200)
        #expect(try await double.send(body(2), serverKey: keys.serverKey).status == 200)
        #expect(try await single.terminate() == 0)
        #expect(try await double.terminate() == 0)
    }

    /// `postgres_statement_timeout` is also PostgreSQL's `idle_in_transaction_session_timeout` on the writer's
    /// connections. A node frozen inside a transaction (SIGSTOP here; a paused VM, a stalled host) cannot run its own
    /// deadlines, and kept the device rows it had locked from every other node until it ran again. Here the frozen
    /// node (2 s) is stopped while its group waits for a row `psql` holds; the row let go, its backend takes it and
    /// waits, idle in the transaction, for a node that does not run. A send to that device through the other node
    /// (commit timeout 10 s) is stored once PostgreSQL has ended the frozen node's session; with the setting not
    /// passed to PostgreSQL it waits out its commit timeout and is answered `Unavailable`. The frozen node, let run
    /// again, answers its send `Unavailable` (its transaction is gone) and stores the next.
    @Test func frozenNodeLetsGoOfItsRows() async throws {
        let postgres = try await TestPostgres.shared
        let (database, url) = try await postgres.namedFreshDatabase("frozen")
        // Each node's sessions by their own name: a probe of one must not see the other's.
        let frozen = try Daemon(arguments: [
            "--store", "postgres", "--postgres-url", url + "?application_name=frozen_node",
            "--postgres-statement-timeout", "2s",
        ])
        let other = try Daemon(arguments: [
            "--store", "postgres", "--postgres-url", url + "?application_name=other_node",
            "--postgres-commit-timeout", "10s",
        ])
        try await frozen.start()
        try await other.start()
        let keys = try await other.createProject()
        let device = try await other.registerDevices(keys, count: 1)[0]
        let body = #"{"to": "\#(device.token)", "data": {"k": "v"}}"#
        #expect(try await frozen.send(body, serverKey: keys.serverKey).status == 200)
        #expect(try await other.send(body, serverKey: keys.serverKey).status == 200)

        let held = try postgres.session(database: database, name: "held_row")
        try held.send("BEGIN; SELECT id FROM devices FOR UPDATE;")
        #expect(try await postgres.waitForActivity(
            database: database, "application_name = 'held_row' AND state = 'idle in transaction'"))
        let stopped = Task { try await frozen.send(body, serverKey: keys.serverKey) }
        #expect(try await postgres.waitForActivity(
            database: database, "application_name = 'frozen_node' AND wait_event_type = 'Lock'"),
            "the frozen node's group did not wait for the row")
        let pid = try #require(frozen.process?.processIdentifier)
        kill(pid, SIGSTOP)
        try held.send("ROLLBACK;")
        _ = await held.finish()
        #expect(try await postgres.waitForActivity(
            database: database, "application_name = 'frozen_node' AND state = 'idle in transaction'"),
            "the frozen node's backend did not take the row")

        let stored = try await other.send(body, serverKey: keys.serverKey)
        #expect(stored.status == 200 && stored.body.contains(#""success":1"#), "\(stored)")
        kill(pid, SIGCONT)
        let lost = try await stopped.value
        #expect(lost.status == 503 && lost.body.contains("Unavailable"), "\(lost)")
        #expect(try await frozen.send(body, serverKey: keys.serverKey).status == 200)
        #expect(try await frozen.terminate() == 0)
        #expect(try await other.terminate() == 0)
    }
}
