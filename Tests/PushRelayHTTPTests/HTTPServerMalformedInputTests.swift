import Foundation
import NIOCore
import NIOPosix
import Testing

@testable import PushRelayHTTP
import TestSupport

/// Bad input ends with the right status or GOAWAY, and the server keeps serving other connections.
@Suite(.serialized, .tags(.peer)) struct HTTPServerMalformedInputTests {
    /// Sends raw bytes on a fresh connection and returns what the server answered before closing, followed by
    /// `<closed>` when the server closed the connection (rather than the 5 s read timeout ending the wait).
    /// With `halfClose`, the client ends its side (`shutdown(SHUT_WR)`) once it has sent, and goes on reading.
    static func rawExchange(port: Int, send: [UInt8], halfClose: Bool = false) async throws -> String {
        let script = """
            import socket, sys
            s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
            s.settimeout(5)
            s.sendall(sys.stdin.buffer.read())
            if sys.argv[2] == '1':
                s.shutdown(socket.SHUT_WR)
            out = b''
            try:
                while True:
                    d = s.recv(65536)
                    if not d:
                        out += b'<closed>'
                        break
                    out += d
            except Exception:
                pass
            sys.stdout.write(out.decode('latin-1'))
            """
        let result = try await ExternalPeer.run(
            ["python3", "-c", script, String(port), halfClose ? "1" : "0"], stdin: String(decoding: send, as: UTF8.self))
        return result.stdout
    }

    /// A file of 4 KiB, over the test routes' 1 KiB limit, for `curl --data-binary @path` (the caller removes it).
    static func bodyOverTheLimit() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("big-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x61, count: 4096))
        return path
    }

    static func stillServes(_ server: TestServer) async throws -> Bool {
        let result = try await ExternalPeer.run(["curl", "-sS", "--http2-prior-knowledge", "\(server.baseURL)/healthz"])
        return result.stdout == #"{"status":"ok"}"#
    }

    @Test func garbageBytesGet400AndClose() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let answer = try await Self.rawExchange(port: server.port, send: Array("\u{01}\u{02}garbage\r\n\r\n".utf8))
        #expect(answer.hasPrefix("HTTP/1.1 400"), "\(answer)")
        #expect(answer.hasSuffix("<closed>"), "\(answer)")
        #expect(try await Self.stillServes(server))
    }

    /// Framing the server cannot be sure a client and an intermediary read alike ends the connection after the
    /// answer; absolute-form targets and HTTP/1.0 keep-alive are served as RFC 9112 says.
    @Test func framingInDoubtClosesTheConnection() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        // HTTP/1.0 with Transfer-Encoding (RFC 9112 §6.1): answered, then closed; the request behind it is not read.
        let chunked10 = try await Self.rawExchange(port: server.port, send: Array(
            ("POST /echo HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"
                + "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n").utf8))
        #expect(chunked10.components(separatedBy: "HTTP/1.1 200").count == 2, "\(chunked10)")
        #expect(chunked10.hasSuffix("<closed>"), "\(chunked10)")
        // Expect: 100-continue on a path nobody serves: 404 and closed, so that the next request is not read as the
        // body the client held back.
        let expecting = try await Self.rawExchange(port: server.port, send: Array(
            ("POST /nope HTTP/1.1\r\nHost: a\r\nContent-Length: 29\r\nExpect: 100-continue\r\n\r\n"
                + "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n").utf8))
        #expect(expecting.hasPrefix("HTTP/1.1 404") && expecting.contains("connection: close"), "\(expecting)")
        #expect(!expecting.contains("HTTP/1.1 200") && expecting.hasSuffix("<closed>"), "\(expecting)")
        // A target in absolute form is served (its authority wins over Host).
        let absolute = try await Self.rawExchange(port: server.port, send: Array(
            "GET http://127.0.0.1:\(server.port)/healthz HTTP/1.1\r\nHost: other\r\nConnection: close\r\n\r\n".utf8))
        #expect(absolute.hasPrefix("HTTP/1.1 200"), "\(absolute)")
        // HTTP/1.0 keep-alive: the answer says the connection stays (else the client reads until it closes).
        let kept = try await Self.rawExchange(port: server.port, send: Array(
            "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /healthz HTTP/1.0\r\n\r\n".utf8))
        #expect(kept.components(separatedBy: "HTTP/1.1 200").count == 3, "\(kept)")
        #expect(kept.contains("connection: keep-alive\r\n") && kept.hasSuffix("<closed>"), "\(kept)")
        #expect(try await Self.stillServes(server))
    }

    /// Heads RFC 9112 says to refuse: an HTTP/1.1 request without Host, with two, or with one that is no authority
    /// (400); a body in a transfer coding other than chunked (501) or a content coding (415), which would be read
    /// as what it is not. Each answer closes the connection.
    @Test func hostAndCodingsAreChecked() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let cases: [(String, String)] = [
            ("GET /healthz HTTP/1.1\r\n\r\n", "HTTP/1.1 400"),
            ("GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "HTTP/1.1 400"),
            ("GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n", "HTTP/1.1 400"),
            ("POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n", "HTTP/1.1 501"),
            ("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\nhi", "HTTP/1.1 415"),
            ("GET /healthz HTTP/1.0\r\n\r\n", "HTTP/1.1 200"),
            ("POST /echo HTTP/1.1\r\nHost: [::1]:80\r\nContent-Encoding: identity\r\nContent-Length: 2\r\n\r\nhi", "HTTP/1.1 200"),
        ]
        for (request, status) in cases {
            let answer = try await Self.rawExchange(port: server.port, send: Array(request.utf8))
            #expect(answer.hasPrefix(status), "\(request.debugDescription): \(answer)")
            if status != "HTTP/1.1 200" { #expect(answer.hasSuffix("<closed>"), "\(answer)") }
        }
        #expect(try await Self.stillServes(server))
    }

    /// Methods, targets and versions the parser reads itself (NIO's parser answered 400 to any method it did not
    /// know, and 404 to `OPTIONS *`): an unknown method is routed (405 with `Allow`), `OPTIONS *` describes the
    /// server, `*` with another method and a version other than 1.x are refused, a target past the header-list
    /// limit is 414 (the fields past it 431).
    @Test func methodsTargetsAndVersions() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let longTarget = "/healthz?q=" + String(repeating: "a", count: 17 * 1024)
        let cases: [(String, String, closes: Bool)] = [
            ("PURGE /healthz HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 405", false),
            ("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 204", false),
            ("GET * HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 400", true),
            ("GET /healthz HTTP/2.0\r\nHost: a\r\n\r\n", "HTTP/1.1 505", true),
            ("GET \(longTarget) HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 414", true),
            ("GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: \(String(repeating: "b", count: 17 * 1024))\r\n\r\n", "HTTP/1.1 431", true),
        ]
        for (request, status, closes) in cases {
            // A keep-alive request behind each: served unless the answer closes the connection.
            let answer = try await Self.rawExchange(
                port: server.port, send: Array((request + "GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").utf8))
            #expect(answer.hasPrefix(status), "\(request.prefix(60).debugDescription): \(answer.prefix(300))")
            #expect(answer.contains(#"{"status":"ok"}"#) == !closes, "\(request.prefix(60).debugDescription): \(answer.prefix(600))")
        }
        // audit-l: OPTIONS * without Host was 204; HTTP/1.0 and a settings payload that is not whole settings were
        // upgraded to h2c (101, then HTTP/2 or a silent close); chunked not last was 501.
        let settings = "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings:"
        let more: [(String, String)] = [
            ("OPTIONS * HTTP/1.1\r\n\r\n", "HTTP/1.1 400"),
            ("GET /healthz HTTP/1.0\r\n\(settings) AAMAAABkAAQAAP__\r\n\r\n", "HTTP/1.1 200"),
            ("GET /healthz HTTP/1.1\r\nHost: a\r\n\(settings) AAA\r\n\r\n", "HTTP/1.1 200"),
            ("POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", "HTTP/1.1 400"),
            ("GET healthz HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 400"),
        ]
        for (request, status) in more {
            let answer = try await Self.rawExchange(port: server.port, send: Array(request.utf8))
            #expect(answer.hasPrefix(status), "\(request.debugDescription): \(answer.prefix(300))")
        }
        let options = try await Self.rawExchange(port: server.port, send: Array("OPTIONS * HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".utf8))
        #expect(options.lowercased().contains("allow: get, head, post, delete, options"), "\(options)")
        let purge = try await Self.rawExchange(port: server.port, send: Array("PURGE /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".utf8))
        #expect(purge.lowercased().contains("allow: get"), "\(purge)")
        #expect(try await Self.stillServes(server))
    }

    /// A client that half-closes after its request (`shutdown(SHUT_WR)`, as `nc -N` and some HTTP/1.0 clients do)
    /// still reads: the request is answered, then the connection closes; an idle half-closed connection closes.
    @Test func halfClosedClientsGetTheirAnswer() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        // Each ends with `<closed>`: the server closed it (a client read timeout would leave no such mark).
        let delayed = try await Self.rawExchange(
            port: server.port, send: Array("GET /delayed HTTP/1.1\r\nHost: a\r\n\r\n".utf8), halfClose: true)
        #expect(delayed.hasPrefix("HTTP/1.1 200") && delayed.contains("late") && delayed.hasSuffix("<closed>"), "\(delayed)")
        let pipelined = try await Self.rawExchange(
            port: server.port,
            send: Array("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\nGET /delayed HTTP/1.1\r\nHost: a\r\n\r\n".utf8),
            halfClose: true)
        #expect(pipelined.components(separatedBy: "HTTP/1.1 200").count == 3 && pipelined.hasSuffix("<closed>"), "\(pipelined)")
        // audit-l: requests pipelined behind one still being answered were dropped at the half-close.
        let behindSlow = try await Self.rawExchange(
            port: server.port,
            send: Array(("GET /delayed HTTP/1.1\r\nHost: a\r\n\r\n" + "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
                + "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n").utf8),
            halfClose: true)
        #expect(behindSlow.components(separatedBy: "HTTP/1.1 200").count == 4 && behindSlow.hasSuffix("<closed>"), "\(behindSlow)")
        let idle = try await Self.rawExchange(port: server.port, send: [], halfClose: true)
        #expect(idle == "<closed>", "\(idle)")
        #expect(try await Self.stillServes(server))
    }

    /// An h2c upgrade whose client sent the HTTP/2 preface and frames in the same write as the upgrade request: they
    /// are answered at once (a PING's ACK), not when the client next sends something.
    @Test func framesSentWithTheUpgradeRequestAreAnswered() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let upgrade = "GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
            + "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n"
        var bytes = Array(upgrade.utf8) + Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        bytes += [0, 0, 0, 4, 0, 0, 0, 0, 0]  // SETTINGS, empty
        bytes += [0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]  // PING
        let answer = try await Self.rawExchange(port: server.port, send: bytes)
        #expect(answer.hasPrefix("HTTP/1.1 101"), "\(answer)")
        let pingAck = String(decoding: [0, 0, 8, 6, 1, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8] as [UInt8], as: UTF8.self)
        #expect(answer.contains(pingAck), "no PING ACK: \(Array(answer.utf8).suffix(80))")
    }

    @Test func badHTTP2PrefaceIsTreatedAsBadHTTP1() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let answer = try await Self.rawExchange(port: server.port, send: Array("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n".utf8))
        #expect(answer.hasPrefix("HTTP/1.1 400"), "\(answer)")
        #expect(answer.hasSuffix("<closed>"), "\(answer)")
        #expect(try await Self.stillServes(server))
    }

    @Test func prefaceThenGarbageFramesGetGoAway() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        // A valid preface, then a frame header claiming a 16 MiB SETTINGS frame on stream 7.
        var bytes = HTTPProtocolSniffer.preface
        bytes += [0xFF, 0xFF, 0xFF, 0x04, 0x00, 0x00, 0x00, 0x00, 0x07] + Array(repeating: 0, count: 32)
        let answer = try await Self.rawExchange(port: server.port, send: bytes)
        // The server's SETTINGS (type 4) then a GOAWAY (type 7) frame, then the connection closes.
        #expect(answer.hasSuffix("<closed>"))
        let raw = Array(answer.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) })
        #expect(Self.frameTypes(raw).contains(0x07), "no GOAWAY in \(raw)")
        #expect(try await Self.stillServes(server))
    }

    /// A header block split over `continuations` CONTINUATION frames of one 5-byte field each (libnghttp2 allows 8):
    /// past the limit the connection ends with `GOAWAY ENHANCE_YOUR_CALM`, not a silent close.
    @Test func continuationFloodGetsGoAway() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let script = #"""
            import socket, struct, sys
            def frame(kind, flags, stream, payload):
                return struct.pack('>I', len(payload))[1:] + bytes([kind, flags]) + struct.pack('>I', stream) + payload
            s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
            s.settimeout(3)  # silence that ends the read (a loaded machine may take a moment to answer)
            # HEADERS: GET http / localhost, END_STREAM, no END_HEADERS
            block = frame(1, 0x1, 1, bytes([0x82, 0x86, 0x84, 0x41, 9]) + b'localhost')
            block += b''.join(frame(9, 0, 1, b'\x00\x01x\x01y') for _ in range(int(sys.argv[2])))
            s.sendall(b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' + frame(4, 0, 0, b'') + block + frame(9, 0x4, 1, b''))
            out = b''
            try:
                while True:
                    d = s.recv(65536)
                    if not d:
                        break
                    out += d
            except Exception:
                pass
            i, seen = 0, []
            while i + 9 <= len(out):
                length, kind = int.from_bytes(out[i:i + 3], 'big'), out[i + 3]
                seen.append(f'goaway:{int.from_bytes(out[i + 13:i + 17], "big")}' if kind == 7 else str(kind))
                i += 9 + length
            print(' '.join(seen))
            """#
        let few = try await ExternalPeer.run(["python3", "-c", script, String(server.port), "3"])
        #expect(few.stdout.contains(" 1 ") || few.stdout.hasSuffix(" 1\n"), "an answer (HEADERS) to 3 CONTINUATIONs: \(few.stdout)")
        let many = try await ExternalPeer.run(["python3", "-c", script, String(server.port), "20"])
        #expect(many.stdout.contains("goaway:11"), "\(many.stdout) \(many.stderr)")
        #expect(try await Self.stillServes(server))
    }

    static func frameTypes(_ bytes: [UInt8]) -> [UInt8] {
        var types: [UInt8] = []
        var index = 0
        while index + 9 <= bytes.count {
            let length = Int(bytes[index]) << 16 | Int(bytes[index + 1]) << 8 | Int(bytes[index + 2])
            types.append(bytes[index + 3])
            index += 9 + length
        }
        return types
    }

    /// A head over the header-list limit: 431, in the route's error format when the head names a route.
    @Test func oversizedHeadersGet431OnBothProtocols() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let big = String(repeating: "a", count: 20 * 1024)
        for flag in ["--http1.1", "--http2-prior-knowledge"] {
            let result = try await ExternalPeer.run(
                ["curl", "-sS", flag, "-o", "/dev/null", "-w", "%{http_code}", "-H", "x-big: \(big)", "\(server.baseURL)/healthz"])
            #expect(result.stdout == "431", "\(flag): \(result.stderr)")
            // On a route with its own error format, the 431 comes in that format.
            let routed = try await ExternalPeer.run(
                ["curl", "-sS", flag, "-w", " %{http_code} %{content_type}", "-H", "x-big: \(big)",
                 "--data-binary", "x", "\(server.baseURL)/json/echo"])
            #expect(routed.stdout == #"{"error":431} 431 application/json"#, "\(flag): \(routed.stderr)")
        }
        #expect(try await Self.stillServes(server))
    }

    @Test func bodyOverTheLimitGets413OnBothProtocols() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let path = Self.bodyOverTheLimit()
        defer { try? FileManager.default.removeItem(atPath: path) }
        for flag in ["--http1.1", "--http2-prior-knowledge"] {
            for route in ["/echo", "/echo-async", "/echo-collected", "/echo-promised"] {
                // With content-length (rejected from the head) and chunked / without length (rejected while streaming).
                for extra in [[String](), ["-H", "transfer-encoding: chunked"]] {
                    if flag != "--http1.1" && !extra.isEmpty { continue }
                    let result = try await ExternalPeer.run(
                        ["curl", "-sS", flag, "-o", "/dev/null", "-w", "%{http_code}", "--data-binary", "@\(path)"]
                            + extra + ["\(server.baseURL)\(route)"])
                    #expect(result.stdout == "413", "\(flag) \(route) \(extra): \(result.stderr)")
                }
            }
        }
        #expect(try await Self.stillServes(server))
    }

    /// A route with an error renderer gets its 413 (from the head, or while the body streams) and its handler's
    /// plain thrown errors in its own format, on both protocols; an error that brings its own Content-Type is
    /// answered as it is.
    @Test func routeErrorsComeInTheRoutesFormat() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let path = Self.bodyOverTheLimit()
        defer { try? FileManager.default.removeItem(atPath: path) }
        func fetch(_ flag: String, _ arguments: [String]) async throws -> String {
            let result = try await ExternalPeer.run(
                ["curl", "-sS", flag, "-w", " %{http_code} %{content_type}"] + arguments)
            return result.stdout + (result.stderr.isEmpty ? "" : " (curl: \(result.stderr))")
        }
        for flag in ["--http1.1", "--http2-prior-knowledge"] {
            for route in ["/json/echo", "/json/echo-async", "/json/echo-collected", "/json/echo-promised"] {
                for extra in [[String](), ["-H", "transfer-encoding: chunked"]] {
                    if flag != "--http1.1" && !extra.isEmpty { continue }
                    let answer = try await fetch(flag, ["--data-binary", "@\(path)"] + extra + ["\(server.baseURL)\(route)"])
                    #expect(answer == #"{"error":413} 413 application/json"#, "\(flag) \(route) \(extra)")
                }
            }
            #expect(try await fetch(flag, ["\(server.baseURL)/json/fail"]) == #"{"error":400} 400 application/json"#)
            #expect(
                try await fetch(flag, ["\(server.baseURL)/json/fail-promised"]) == #"{"error":409} 409 application/json"#)
            #expect(
                try await fetch(flag, ["\(server.baseURL)/json/fail-own"]) == "{\"own\":true}\n 400 application/json")
            // Routes without a renderer keep plain text.
            #expect(try await fetch(flag, ["\(server.baseURL)/fail"]) == "nope\n 400 text/plain; charset=utf-8")
        }
        #expect(try await Self.stillServes(server))
    }

    /// HTTP/1.1: a body that does not arrive within `requestTimeout` is answered 408 in the route's format too.
    @Test func slowBodyTimeoutComesInTheRoutesFormat() async throws {
        var configuration = HTTPServer.Configuration()
        configuration.requestTimeout = .milliseconds(300)
        let server = try await TestServer.start(configuration: configuration)
        defer { Task { await server.server.shutdown() } }
        let script = PythonPeer.prelude + """
            for path in ('/json/echo', '/echo'):
                s = socket.create_connection(('127.0.0.1', PORT))
                s.settimeout(10)
                s.sendall(('POST %s HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 100\\r\\n\\r\\nx' % path).encode())
                out = read_to_end(s)
                head, _, body = out.partition(b'\\r\\n\\r\\n')
                lines = head.split(b'\\r\\n')
                kind = [l for l in lines if l.lower().startswith(b'content-type:')]
                print(lines[0].decode(), kind[0].decode().split(':', 1)[1].strip() if kind else '-', body.decode().strip())
                s.close()
            """
        let result = try await ExternalPeer.run(["python3", "-c", script, String(server.port)])
        #expect(
            result.stdout == """
                HTTP/1.1 408 Request Timeout application/json {"error":408}
                HTTP/1.1 408 Request Timeout text/plain; charset=utf-8 request body not received in time

                """, "\(result.stderr)")
    }

    /// An early answer to an HTTP/2 upload (413 from the head) is followed by RST_STREAM NO_ERROR to stop the
    /// upload, in a later write than the answer: Debian 12's curl (7.88) failed about one in 30 such answers when
    /// both came in one read ("(92) Stream error in the HTTP/2 framing layer"). 60 in a row must all read 413,
    /// and a 2 MB upload must still be stopped (curl sends no more than the stream's first window).
    @Test func earlyHTTP2AnswersAreReadByCurl() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let path = Self.bodyOverTheLimit()
        defer { try? FileManager.default.removeItem(atPath: path) }
        var codes: [String: Int] = [:]
        for _ in 0..<60 {
            let result = try await ExternalPeer.run([
                "curl", "-sS", "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code}", "--data-binary",
                "@\(path)", "\(server.baseURL)/echo",
            ])
            codes[result.stdout + (result.stderr.isEmpty ? "" : " " + result.stderr), default: 0] += 1
        }
        #expect(codes == ["413": 60])
        let large = FileManager.default.temporaryDirectory.appendingPathComponent("large-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: large, contents: Data(count: 2_000_000))
        defer { try? FileManager.default.removeItem(atPath: large) }
        let upload = try await ExternalPeer.run([
            "curl", "-sS", "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code} %{size_upload}",
            "--data-binary", "@\(large)", "\(server.baseURL)/echo",
        ])
        let fields = upload.stdout.split(separator: " ")
        #expect(fields.first == "413", "\(upload.stdout) \(upload.stderr)")
        #expect((fields.last.flatMap { Int($0) } ?? .max) < 1_000_000, "the reset stopped the upload: \(upload.stdout)")
        #expect(try await Self.stillServes(server))
    }

    @Test
    func http2BodyOverTheLimitWithoutContentLengthGets413() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let script = PythonPeer.prelude + """
            conn, sock = connect(PORT)
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, [(':method', 'POST'), (':path', '/echo-async'), (':scheme', 'http'), (':authority', 'x')])
            for _ in range(4):
                conn.send_data(sid, b'a' * 512)
            sock.sendall(conn.data_to_send())
            r = read_until(conn, sock, lambda r: sid in r['ended'] or sid in r['reset'])
            print(r['status'].get(sid))
            """
        let result = try await PythonPeer.run(script, port: server.port)
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "413", "\(result.stderr)")
    }

    /// An early answer (here a gate's refusal) while the client still holds its body back, as curl does with
    /// `expect: 100-continue`: no reset follows the answer on its own (curl 7.88 fails an answer whose RST_STREAM it
    /// reads in the same read, "Empty reply from server"); a client that ends the stream gets none; one that sends
    /// more of the body is reset with NO_ERROR; one that does neither is reset (NO_ERROR) at its request's deadline.
    @Test
    func earlyHTTP2AnswerWaitsForTheClient() async throws {
        // The deadline is well past the half second the first stream is watched for a reset it must not get, however
        // slowly a loaded machine runs the script.
        var configuration = HTTPServer.Configuration()
        configuration.requestTimeout = .seconds(5)
        let server = try await TestServer.start(configuration: configuration)
        defer { Task { await server.server.shutdown() } }
        let script = PythonPeer.prelude + """
            conn, sock = connect(PORT)
            def denied():
                sid = conn.get_next_available_stream_id()
                conn.send_headers(sid, [(':method', 'POST'), (':path', '/gated-echo'), (':scheme', 'http'),
                                        (':authority', 'x'), ('x-gate', 'deny'), ('expect', '100-continue')])
                sock.sendall(conn.data_to_send())
                return sid
            r = None
            # One that sends more after the answer: reset, NO_ERROR.
            more = denied()
            r = read_until(conn, sock, lambda r: more in r['ended'] or more in r['reset'], r)
            sock.settimeout(0.5)
            r = read_until(conn, sock, lambda r: more in r['reset'], r)
            quiet = more not in r['reset']
            sock.settimeout(10)
            conn.send_data(more, b'x' * 10)
            sock.sendall(conn.data_to_send())
            r = read_until(conn, sock, lambda r: more in r['reset'], r)
            print('more', r['status'].get(more), quiet, r['reset'].get(more))
            # One that ends the stream after the answer: no reset, and the connection goes on.
            ends = denied()
            r = read_until(conn, sock, lambda r: ends in r['ended'], r)
            conn.end_stream(ends)
            sock.sendall(conn.data_to_send())
            after = conn.get_next_available_stream_id()
            conn.send_headers(after, [(':method', 'GET'), (':path', '/healthz'), (':scheme', 'http'), (':authority', 'x')],
                              end_stream=True)
            sock.sendall(conn.data_to_send())
            r = read_until(conn, sock, lambda r: after in r['ended'], r)
            print('ends', r['status'].get(ends), r['reset'].get(ends), r['status'].get(after))
            # One that does neither: reset at its request's deadline, NO_ERROR.
            silent = denied()
            r = read_until(conn, sock, lambda r: silent in r['reset'] or r['closed'], r)
            print('silent', r['status'].get(silent), r['reset'].get(silent), r['closed'])
            """
        let result = try await PythonPeer.run(script, port: server.port)
        #expect(
            result.stdout.split(separator: "\n") == ["more 403 True 0", "ends 403 None 200", "silent 403 0 False"],
            "\(result.stdout) \(result.stderr)")
    }

    @Test
    func streamResetStormEndsWithGoAway() async throws {
        var configuration = HTTPServer.Configuration()
        configuration.streamResetBurst = 100
        configuration.streamResetRatePerSecond = 10
        let server = try await TestServer.start(configuration: configuration)
        defer { Task { await server.server.shutdown() } }
        let script = PythonPeer.prelude + """
            conn, sock = connect(PORT)
            r = None
            try:
                for batch in range(20):
                    for _ in range(50):
                        sid = conn.get_next_available_stream_id()
                        conn.send_headers(sid, [(':method', 'GET'), (':path', '/hold'), (':scheme', 'http'), (':authority', 'x')])
                        conn.reset_stream(sid)
                    sock.sendall(conn.data_to_send())
            except (BrokenPipeError, ConnectionResetError, h2.exceptions.ProtocolError):
                pass
            try:
                r = read_until(conn, sock, lambda r: r['goaway'] is not None or r['closed'])
            except (ConnectionResetError, h2.exceptions.ProtocolError):
                r = {'goaway': 'reset', 'closed': True}
            print(r['goaway'])
            """
        let result = try await PythonPeer.run(script, port: server.port)
        let goaway = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        // nghttp2 ends the session with GOAWAY (INTERNAL_ERROR = 2 or ENHANCE_YOUR_CALM = 11).
        #expect(goaway == "2" || goaway == "11", "goaway \(goaway): \(result.stderr)")
        #expect(try await Self.stillServes(server))
    }
}
