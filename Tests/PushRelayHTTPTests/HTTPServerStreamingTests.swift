import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import PushRelayHTTP
import TestSupport

/// Long-lived streaming responses: other requests flow beside them, slow readers are held back, shutdown drains.
@Suite(.serialized, .tags(.peer)) struct HTTPServerStreamingTests {
    @Test
    func longLivedStreamWhileOtherRequestsAreAnswered() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        // One stream gets an event every 50 ms for far longer than the test runs; meanwhile, on the same
        // connection, 10 /healthz requests are sent one by one, each after the previous answer. All 10 must be
        // answered while the event stream is open (no clock decides it: the stream is reset only afterwards), and
        // the stream's events go on meanwhile.
        let script = PythonPeer.prelude + """
            conn, sock = connect(PORT)
            events = conn.get_next_available_stream_id()
            conn.send_headers(events, [(':method', 'GET'), (':path', '/events?count=100000&interval=50'), (':scheme', 'http'), (':authority', 'x')], end_stream=True)
            sock.sendall(conn.data_to_send())
            r = read_until(conn, sock, lambda r: b'event 0' in r['body'].get(events, b''))
            answered_while_open = 0
            for i in range(10):
                sid = conn.get_next_available_stream_id()
                conn.send_headers(sid, [(':method', 'GET'), (':path', '/healthz'), (':scheme', 'http'), (':authority', 'x')], end_stream=True)
                sock.sendall(conn.data_to_send())
                r = read_until(conn, sock, lambda r: sid in r['ended'], r)
                if r['status'].get(sid) == '200' and events not in r['ended']:
                    answered_while_open += 1
            seen = r['body'][events].count(b'data: event')
            r = read_until(conn, sock, lambda r: r['body'][events].count(b'data: event') > seen, r)
            flowing = r['body'][events].count(b'data: event') > seen and events not in r['ended']
            conn.reset_stream(events, 8)
            sock.sendall(conn.data_to_send())
            print(answered_while_open, flowing)
            """
        let result = try await PythonPeer.run(script, port: server.port)
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "10 True", "\(result.stderr)")
    }

    /// An HTTP/1.0 client cannot read chunks: its stream comes unframed and ends with the connection. A HEAD of a
    /// stream gets the chunked head and nothing after it (no last chunk); a pipelined GET of one is chunked.
    @Test
    func streamFramingFollowsTheRequest() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let old = try await HTTPServerMalformedInputTests.rawExchange(
            port: server.port, send: Array("GET /events?count=2&interval=1 HTTP/1.0\r\n\r\n".utf8))
        #expect(old.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(old)")
        #expect(!old.lowercased().contains("transfer-encoding"), "\(old)")
        #expect(old.hasSuffix("connection: close\r\n\r\ndata: event 0\n\ndata: event 1\n\n<closed>"), "\(old)")
        let head = try await HTTPServerMalformedInputTests.rawExchange(
            port: server.port,
            send: Array(
                ("HEAD /events?count=2&interval=1 HTTP/1.1\r\nHost: x\r\n\r\n"
                    + "GET /events?count=2&interval=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").utf8))
        let expected =
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            + "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
            + "f\r\ndata: event 0\n\n\r\nf\r\ndata: event 1\n\n\r\n0\r\n\r\n<closed>"
        #expect(head.replacing(#/date: [^\r]*\r\n/#, with: "") == expected, "\(head)")
    }

    /// A reader that stops reading: the flood route's writer must stall with the server holding a bounded amount.
    @Test
    func slowHTTP2ReaderDoesNotGrowServerBuffers() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        // Opens /flood with a 1 MiB stream window and a small socket buffer, then never reads again.
        let script = PythonPeer.prelude + """
            conn, sock = connect(PORT, rcvbuf=16384)
            conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1 << 20})
            conn.increment_flow_control_window(1 << 24)
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, [(':method', 'GET'), (':path', '/flood'), (':scheme', 'http'), (':authority', 'x')], end_stream=True)
            sock.sendall(conn.data_to_send())
            print('sent', flush=True)
            time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 8)
            """
        let client = Task { try await ExternalPeer.run(["python3", "-c", "import h2.settings\n" + script, String(server.port), "8"]) }
        try await assertFloodStalls(server)
        client.cancel()
        _ = try? await client.value
    }

    @Test func slowHTTP1ReaderDoesNotGrowServerBuffers() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let script = """
            import socket, sys, time
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
            s.connect(('127.0.0.1', int(sys.argv[1])))
            s.sendall(b'GET /flood HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')
            time.sleep(8)
            """
        let client = Task { try await ExternalPeer.run(["python3", "-c", script, String(server.port)]) }
        try await assertFloodStalls(server)
        client.cancel()
        _ = try? await client.value
    }

    /// Waits until the flood writer has started and then stopped making progress, then checks what the server
    /// holds. Without back-pressure every `write` returns at once and the whole flood ends up in server memory.
    private func assertFloodStalls(_ server: TestServer) async throws {
        var last = -1
        var stableRounds = 0
        for _ in 0..<200 {
            try await Task.sleep(for: .milliseconds(50))
            let written = server.probe.floodBytesWritten
            if written > 0 && written == last { stableRounds += 1 } else { stableRounds = 0 }
            last = written
            if stableRounds >= 10 { break }
        }
        let written = server.probe.floodBytesWritten
        let buffered = await server.server.bufferedOutboundBytes()
        #expect(written > 0)
        #expect(written < TestServer.floodTotal, "the writer never stalled: \(written) bytes accepted")
        // The stream watermark (64 KiB) + NIO's write buffer watermark (64 KiB) + one 16 KiB write + one
        // 64 KiB nghttp2 output batch: well under 512 KiB, whatever the peer's window.
        #expect(buffered < 512 * 1024, "server holds \(buffered) bytes for a reader that does not read")
    }

    /// Polls `condition` for up to 10 s.
    private func eventually(_ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }

    /// Who ends an HTTP/2 stream held open by `/hold-callback`.
    enum StreamEnd: CaseIterable { case peerLeaves, serverDrains }

    @Test(arguments: StreamEnd.allCases)
    func onCloseRunsOnceOverHTTP2(_ end: StreamEnd) async throws {
        let server = try await TestServer.start()
        let client = try await HTTP2Client.connect(host: "127.0.0.1", port: server.port)
        let response = try await client.execute(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/hold-callback"))
        var iterator = response.body.makeAsyncIterator()
        #expect(try await iterator.next().map { String(buffer: $0) } == "open\n")
        #expect(server.probe.closeCallbacks == 0)
        switch end {
        case .peerLeaves:
            await client.close()
            #expect(try await eventually { server.probe.streamsClosed == 1 })
            await server.server.shutdown()
        case .serverDrains:
            await server.server.shutdown()
            #expect(server.probe.streamsClosed == 1)
            #expect(try await iterator.next() == nil)
            await client.close()
        }
        #expect(server.probe.closeCallbacks == 1)
    }

    @Test
    func onCloseRunsWhenAnHTTP1PeerLeaves() async throws {
        let server = try await TestServer.start()
        // curl leaves at its time limit; 4 s, so that a loaded machine still answers "open" before it (with 1 s, a
        // CI run beside builds and a callgrind measurement once got nothing).
        let result = try await ExternalPeer.run([
            "curl", "-sS", "--http1.1", "-N", "-m", "4", "http://127.0.0.1:\(server.port)/hold-callback",
        ])
        #expect(result.status == 28, "curl stops at its time limit: \(result.stderr)")  // 28: timeout
        #expect(result.stdout == "open\n")
        #expect(try await eventually { server.probe.streamsClosed == 1 })
        #expect(server.probe.closeCallbacks == 1)
        await server.server.shutdown()
    }

    @Test func gracefulShutdownEndsIdleStreamsAndCompletes() async throws {
        let server = try await TestServer.start()
        let client = try await HTTP2Client.connect(host: "127.0.0.1", port: server.port)
        let response = try await client.execute(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/hold"))
        var iterator = response.body.makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first.map { String(buffer: $0) } == "open\n")
        await server.server.shutdown()
        // The handler saw waitUntilClosed return, ended its stream cleanly, and the connection was closed.
        #expect(server.probe.streamsClosed == 1)
        #expect(try await iterator.next() == nil)
        #expect(server.server.connectionCount == 0)
        await client.close()
    }
}
