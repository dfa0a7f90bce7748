import Foundation
import TestSupport
import Testing

/// Attacks on the connection layer against the real daemon (issue 12, item 3), by an independent raw-socket client
/// (``ConnectionAttacker``): each attack is cut off by the deadline or limit that exists for it, the daemon keeps
/// serving other clients, and its memory stays bounded. The bounds asserted are the attacker's patience (30 s),
/// not timings: the daemon's settings are 2 s, so only a daemon that never reacts fails.
@Suite(.serialized, .tags(.endToEnd), .hangGuard) struct ConnectionAttackTests {
    /// A daemon with short deadlines, so that the attacks end within seconds.
    private static func startDaemon(_ arguments: [String] = []) async throws -> (Daemon, ProjectKeys) {
        let daemon = try Daemon(arguments: ["--idle-timeout", "2s", "--request-timeout", "2s"] + arguments)
        try await daemon.start()
        return (daemon, try await daemon.createProject())
    }

    /// Still serving: `/healthz` answers over a fresh connection and the process is alive.
    private static func expectServing(_ daemon: Daemon, after attack: String) async throws {
        let health = try await run("curl", ["-sS", "--max-time", "10", "\(daemon.baseURL)/healthz"])
        #expect(health.stdout.contains("ok"), "after \(attack): \(health.combined)")
        #expect(daemon.process?.isRunning == true, "the daemon died after \(attack): \(daemon.log)")
    }

    /// The daemon's peak resident set in MiB (`VmHWM`).
    private static func peakRSSMiB(_ daemon: Daemon) -> Int {
        guard let pid = daemon.process?.processIdentifier,
            let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kib = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kib / 1024
    }

    @Test func slowClientsAreCutOffByTheirDeadlines() async throws {
        let (daemon, keys) = try await Self.startDaemon()

        // HTTP/1.1: a head trickled one header line at a time is closed at idle_timeout, unanswered.
        let loris = try await ConnectionAttacker.run("slowloris", port: daemon.port)
        #expect(loris.event == "closed", "slowloris: \(loris)")
        // HTTP/1.1: a body trickled one byte at a time is answered 408 at request_timeout.
        let body = try await ConnectionAttacker.run("slow-body", port: daemon.port, serverKey: keys.serverKey)
        #expect(body.event == "status" && body.status?.hasPrefix("HTTP/1.1 408") == true, "slow body: \(body)")
        // HTTP/2: a connection that opens no stream is closed at idle_timeout though it PINGs (GOAWAY NO_ERROR).
        let idle = try await ConnectionAttacker.run("h2-idle-pings", port: daemon.port)
        #expect(idle.event == "goaway" && idle.code == 0, "idle HTTP/2 with PINGs: \(idle)")
        // HTTP/2: a stream whose body trickles is reset with CANCEL at request_timeout.
        let stream = try await ConnectionAttacker.run("h2-slow-stream", port: daemon.port, serverKey: keys.serverKey)
        #expect(stream.event == "rst" && stream.code == 8, "slow HTTP/2 stream: \(stream)")
        // HTTP/2: answers held back by a window the client never opens are reset with CANCEL (request_timeout
        // without progress), not kept for ever.
        let window = try await ConnectionAttacker.run("h2-closed-window", port: daemon.port)
        #expect(window.event == "rst" && window.code == 8, "closed HTTP/2 window: \(window)")
        print("deadlines: slowloris \(loris), slow body \(body), idle h2 \(idle), slow stream \(stream), closed window \(window)")

        try await Self.expectServing(daemon, after: "slow clients")
        #expect(try await daemon.terminate() == 0)
    }

    @Test func framesThatAskForNoWorkAreAFloodAndCloseTheConnection() async throws {
        let (daemon, keys) = try await Self.startDaemon()
        for attack in ["h2-empty-data-flood", "h2-priority-flood"] {
            let outcome = try await ConnectionAttacker.run(attack, port: daemon.port, serverKey: keys.serverKey)
            // GOAWAY ENHANCE_YOUR_CALM (0xb).
            #expect(outcome.event == "goaway" && outcome.code == 11, "\(attack): \(outcome)")
            try await Self.expectServing(daemon, after: attack)
        }
        // PINGs need answers: nghttp2's bound on queued acknowledgements or the budget ends them, either way the
        // connection goes.
        let pings = try await ConnectionAttacker.run("h2-ping-flood", port: daemon.port)
        #expect(pings.event == "goaway" || pings.event == "closed", "PING flood: \(pings)")
        try await Self.expectServing(daemon, after: "PING flood")
        let peak = Self.peakRSSMiB(daemon)
        print("floods: peak RSS \(peak) MiB")
        #expect(peak < 256, "peak RSS \(peak) MiB after the floods")
        #expect(try await daemon.terminate() == 0)
    }

    @Test func anHPACKBombFailsItsConnectionOnly() async throws {
        let (daemon, _) = try await Self.startDaemon()
        let outcome = try await ConnectionAttacker.run("hpack-bomb", port: daemon.port)
        // 16 MB of decoded fields from 4 KB on the wire: the connection fails (GOAWAY, or closed), nothing is built.
        #expect(outcome.event == "goaway" && outcome.code == 11, "HPACK bomb: GOAWAY ENHANCE_YOUR_CALM (11): \(outcome)")
        try await Self.expectServing(daemon, after: "HPACK bomb")
        let peak = Self.peakRSSMiB(daemon)
        print("HPACK bomb: \(outcome), peak RSS \(peak) MiB")
        #expect(peak < 128, "peak RSS \(peak) MiB after the HPACK bomb")
        #expect(try await daemon.terminate() == 0)
    }

    @Test(arguments: [("max-connections", "--max-connections"), ("max-connections-per-address", "--max-connections-per-address")])
    func connectionsBeyondTheLimitAreClosedAtAccept(attack: String, flag: String) async throws {
        let (daemon, _) = try await Self.startDaemon([flag, "4"])
        let outcome = try await ConnectionAttacker.run(attack, port: daemon.port, extra: ["4"])
        #expect(outcome.event == "ok", "\(attack): \(outcome)")
        #expect(outcome.refused == true, "\(attack): a fifth connection was served: \(outcome)")
        #expect(outcome.afterClose == "HTTP/1.1 200 OK", "\(attack): no room after one closed: \(outcome)")
        #expect(try await daemon.terminate() == 0)
    }

    /// `max_connections` fits the machine it runs on: unset, it is the open-file limit minus 64 when that is lower
    /// than 200,000, without a warning; set above the limit, it is kept and warned about.
    @Test func theDefaultConnectionLimitFollowsTheOpenFileLimit() async throws {
        let derived = try await run(
            "bash", ["-c", "ulimit -n 1000 && exec \"$0\" check-config --listen 127.0.0.1:0", Daemon.binary])
        #expect(derived.status == 0, "\(derived.combined)")
        #expect(derived.stdout.contains("max_connections = 936"), "\(derived.stdout)")
        #expect(!derived.combined.contains("open-file limit"), "\(derived.combined)")

        let explicit = try await run(
            "bash",
            ["-c", "ulimit -n 1000 && exec \"$0\" check-config --listen 127.0.0.1:0 --max-connections 5000", Daemon.binary])
        #expect(explicit.stdout.contains("max_connections = 5000"), "\(explicit.stdout)")
        #expect(explicit.combined.contains("above this process's open-file limit 1000"), "\(explicit.combined)")
    }
}
