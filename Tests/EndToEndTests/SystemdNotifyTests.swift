import Foundation
import TestSupport
import Testing

/// The real daemon under a fake `$NOTIFY_SOCKET`: READY=1 once it listens, STOPPING=1 on SIGTERM, in that order.
@Suite(.serialized, .tags(.endToEnd), .hangGuard) struct SystemdNotifyTests {
    @Test func readyThenStoppingOverNotifySocket() async throws {
        let socket = FakeNotifySocket()
        let daemon = try Daemon(environment: ["NOTIFY_SOCKET": socket.address])
        try await daemon.start()

        var messages: [String] = []
        while let message = await socket.next(timeoutMilliseconds: 5_000) {
            messages.append(message)
            if message.split(separator: "\n").contains("READY=1") { break }
        }
        let ready = try #require(messages.last, "no READY=1; got \(messages)")
        #expect(ready.split(separator: "\n").contains("READY=1"))
        #expect(!messages.contains { $0.contains("STOPPING=1") })
        // The daemon answers once it said READY.
        let readyz = try await run("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(daemon.baseURL)/readyz"])
        #expect(readyz.stdout == "200")

        daemon.sendTerminate()
        var stopping: [String] = []
        while let message = await socket.next(timeoutMilliseconds: 10_000) {
            stopping.append(message)
            if message.split(separator: "\n").contains("STOPPING=1") { break }
        }
        #expect(stopping.contains { $0.split(separator: "\n").contains("STOPPING=1") }, "after SIGTERM: \(stopping)")
        #expect(!stopping.contains { $0.split(separator: "\n").contains("READY=1") })
        let exit = try #require(try await daemon.waitForExit(), "the daemon did not exit")
        #expect(exit.status == 0)
    }
}

/// The watchdog outlives the drain (issue 14): `serve` runs `RelayServiceGroup.make`'s order, watchdog first and
/// therefore stopped last, so systemd keeps hearing `WATCHDOG=1` while the daemon drains for longer than
/// `WatchdogSec=`. (Before, `serve` ordered the watchdog after the daemon: it stopped before the drain began.)
@Suite(.serialized, .tags(.endToEnd), .hangGuard) struct SystemdWatchdogDrainTests {
    /// An HTTP/2 request whose body never ends, with a valid server key (argument 2: a send without one is refused
    /// before its body is read): HEADERS and one DATA byte of a declared 100, then a PING. The PING's
    /// acknowledgement proves the daemon has the stream open (frames are processed in order); prints `held`. Then
    /// reads until the daemon closes the connection.
    static let stalledRequest = #"""
        import socket, sys, h2.connection, h2.config, h2.events
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
        c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        c.initiate_connection()
        c.send_headers(1, [(":method", "POST"), (":path", "/fcm/send"), (":scheme", "http"),
                           (":authority", "127.0.0.1"), ("content-type", "application/json"), ("content-length", "100"),
                           ("authorization", "key=" + sys.argv[2])])
        c.send_data(1, b"{")
        c.ping(b"stalled!")
        s.sendall(c.data_to_send())
        while True:
            data = s.recv(65536)
            if not data: break
            for event in c.receive_data(data):
                if isinstance(event, h2.events.PingAckReceived): print("held", flush=True)
            s.sendall(c.data_to_send())
        print("closed", flush=True)
        """#

    /// Waits (at most 30 s) until the collected messages hold `line`.
    static func waitFor(_ socket: FakeNotifySocket, _ line: String) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if socket.messages.contains(where: { $0.split(separator: "\n").contains(Substring(line)) }) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw DaemonError(message: "no \(line) on the notify socket: \(socket.messages)")
    }

    @Test func watchdogKeepsPingingThroughADrainLongerThanItsInterval() async throws {
        let socket = FakeNotifySocket()
        // WatchdogSec=0.4 s: a ping every 200 ms. The stalled request holds the drain for its whole 2 s timeout.
        let daemon = try Daemon(
            arguments: ["--shutdown-drain-timeout", "2s"],
            environment: ["NOTIFY_SOCKET": socket.address, "WATCHDOG_USEC": "400000"]
        )
        try await daemon.start()
        // Read the socket all along, on a thread of its own: a Unix datagram socket queues only
        // net.unix.max_dgram_qlen messages (10 on this machine), and pings left unread while the stalled request is
        // set up would crowd out STOPPING=1.
        socket.startCollecting()
        defer { socket.stopCollecting() }
        try await Self.waitFor(socket, "READY=1")

        let keys = try await daemon.createProject()
        let stalled = try StreamingProcess("python3", ["-c", Self.stalledRequest, "\(daemon.port)", keys.serverKey])
        defer { stalled.stop() }
        try await stalled.waitFor(timeout: .seconds(30), "the stalled request to be open") { $0.contains("held") }

        daemon.sendTerminate()
        let exit = try #require(try await daemon.waitForExit(), "the daemon did not exit")
        #expect(exit.status == 0, "daemon log:\n\(exit.log)")
        try? await Self.waitFor(socket, "STOPPING=1")
        try await Task.sleep(for: .milliseconds(300))  // The last datagrams, sent before the exit, are read.
        socket.stopCollecting()
        let messages = socket.messages
        let stopIndex = messages.firstIndex { $0.split(separator: "\n").contains("STOPPING=1") }
        #expect(stopIndex != nil, "no STOPPING=1 in \(messages)")
        let afterStop = stopIndex.map { Array(messages[$0...]) } ?? []
        // The drain lasted 2 s at 200 ms per ping: with the watchdog still running, about ten pings. Two prove it.
        let pings = afterStop.filter { $0.split(separator: "\n").contains("WATCHDOG=1") }.count
        #expect(pings >= 2, "watchdog pings after STOPPING=1: \(pings); messages: \(afterStop)")
        // The drain ended the stalled request's connection.
        #expect(await stalled.waitForExit(timeout: .seconds(10)) == 0, "\(stalled.text)")
    }
}
