import Foundation
import TestSupport

/// Connection-level attacks on the real daemon, written as raw HTTP/1.1 bytes and raw HTTP/2 frames in Python (an
/// independent client: no code of the daemon's), one attack per run. Each prints one JSON object: what the daemon
/// did (`closed`, `goaway` with its error code, `rst` with its code, a `status` line, or `timeout` when it did
/// nothing) and after how many seconds.
enum ConnectionAttacker {
    struct Outcome: Decodable, CustomStringConvertible {
        /// `closed`, `goaway`, `rst`, `status`, `timeout`, or `ok` for the connection-limit attacks.
        var event: String
        var code: Int?
        var status: String?
        var seconds: Double?
        var refused: Bool?
        var afterClose: String?

        var description: String {
            "\(event) code=\(code.map(String.init) ?? "-") status=\(status ?? "-") after \(seconds ?? 0) s"
                + (refused.map { " refused=\($0)" } ?? "") + (afterClose.map { " afterClose=\($0)" } ?? "")
        }
    }

    /// Runs `attack` against `port`; `limit` bounds how long the attacker waits for the daemon to react (seconds).
    static func run(_ attack: String, port: Int, serverKey: String = "", extra: [String] = [], limit: Int = 30)
        async throws -> Outcome
    {
        let result = try await ChildProcess.run(
            "python3", ["-c", script, attack, String(port), serverKey, String(limit)] + extra,
            timeout: .seconds(limit + 60))
        guard result.status == 0, let line = result.stdout.split(separator: "\n").last,
            let outcome = try? JSONDecoder().decode(Outcome.self, from: Data(line.utf8))
        else {
            throw DaemonError(message: "attacker \(attack) failed: \(result.status) \(result.stdout) \(result.stderr)")
        }
        return outcome
    }

    static let script = #"""
        import json, socket, struct, sys, time
        from hpack import Encoder

        attack, port, key, limit = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
        PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
        DATA, HEADERS, PRIORITY, RST, SETTINGS, PING, GOAWAY, WINDOW = 0, 1, 2, 3, 4, 6, 7, 8

        def frame(kind, flags, stream, payload=b""):
            return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload

        def connect():
            s = socket.create_connection(("127.0.0.1", port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return s

        def h2():
            s = connect()
            s.sendall(PREFACE + frame(SETTINGS, 0, 0))
            return s

        def request_block(encoder, method, path, extra=()):
            headers = [(":method", method), (":scheme", "http"), (":authority", "127.0.0.1"), (":path", path)]
            if key:
                headers.append(("authorization", "key=" + key))
            headers.append(("content-type", "application/json"))
            return encoder.encode(headers + list(extra))

        def done(event, started, **fields):
            fields.update(event=event, seconds=round(time.monotonic() - started, 3))
            print(json.dumps(fields))
            sys.exit(0)

        def watch(s, started, every=None, send=b"", http1=False, answered=()):
            """Reads until the daemon closes, sends GOAWAY / RST_STREAM / an HTTP/1.1 status line, or `limit` passes;
            sends `send` every `every` seconds meanwhile (a trickle, or PINGs)."""
            buffer = b""
            s.settimeout(0.05)
            last = time.monotonic()
            while time.monotonic() - started < limit:
                if every is not None and time.monotonic() - last >= every:
                    last = time.monotonic()
                    try:
                        s.sendall(send)
                    except OSError:
                        pass  # the daemon closed: the next read says so
                try:
                    data = s.recv(65536)
                except socket.timeout:
                    continue
                except OSError:
                    done("closed", started)
                if not data:
                    done("closed", started)
                buffer += data
                if http1:
                    if b"\r\n" in buffer:
                        done("status", started, status=buffer.split(b"\r\n")[0].decode())
                    continue
                while len(buffer) >= 9:
                    length = int.from_bytes(buffer[:3], "big")
                    if len(buffer) < 9 + length:
                        break
                    kind, flags = buffer[3], buffer[4]
                    stream = int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
                    payload, buffer = buffer[9:9 + length], buffer[9 + length:]
                    if kind == GOAWAY:
                        done("goaway", started, code=int.from_bytes(payload[4:8], "big"))
                    if kind == RST:
                        done("rst", started, code=int.from_bytes(payload[:4], "big"))
                    if kind == SETTINGS and not flags & 1:
                        try:
                            s.sendall(frame(SETTINGS, 1, 0))
                        except OSError:
                            pass  # the daemon closed: the next read says so
                    if kind == HEADERS and stream not in answered:
                        done("headers", started)
            done("timeout", started)

        def http1_get(s):
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            s.settimeout(10)
            answer = b""
            while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
                try:
                    data = s.recv(4096)
                except OSError:
                    return "closed"
                if not data:
                    return "closed" if not answer else answer.split(b"\r\n")[0].decode()
                answer += data
            return answer.split(b"\r\n")[0].decode()

        started = time.monotonic()
        if attack == "slowloris":
            # A request head that never ends: one header line every 0.3 s.
            s = connect()
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            watch(s, started, every=0.3, send=b"X-Slow: 1\r\n", http1=True)
        elif attack == "slow-body":
            # A complete head announcing 1,000 bytes of body, then one byte every 0.3 s.
            s = connect()
            s.sendall(("POST /fcm/send HTTP/1.1\r\nHost: x\r\nAuthorization: key=%s\r\n"
                       "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{" % key).encode())
            watch(s, started, every=0.3, send=b" ", http1=True)
        elif attack == "h2-idle-pings":
            # No stream ever, a PING every 0.3 s.
            s = h2()
            watch(s, started, every=0.3, send=frame(PING, 0, 0, b"12345678"))
        elif attack == "h2-slow-stream":
            # A request whose body never ends: one byte of DATA every 0.3 s.
            s = h2()
            s.sendall(frame(HEADERS, 4, 1, request_block(Encoder(), "POST", "/fcm/send")))
            watch(s, started, every=0.3, send=frame(DATA, 0, 1, b" "))
        elif attack == "h2-closed-window":
            # Never opens its flow-control window (INITIAL_WINDOW_SIZE 0): 256 cheap requests, whose answers' heads
            # come and whose bodies cannot; the first reset of one of them ends the attack.
            s = connect()
            s.sendall(PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 4, 0)))
            encoder = Encoder()
            streams = range(1, 512, 2)
            s.sendall(b"".join(frame(HEADERS, 5, sid, request_block(encoder, "GET", "/healthz")) for sid in streams))
            watch(s, started, answered=set(streams))
        elif attack == "h2-empty-data-flood":
            # 100,000 empty DATA frames on an open request: no work asked, only the daemon's time.
            s = h2()
            s.sendall(frame(HEADERS, 4, 1, request_block(Encoder(), "POST", "/fcm/send")))
            try:
                s.sendall(frame(DATA, 0, 1) * 100000)
            except OSError:
                pass
            watch(s, started)
        elif attack == "h2-priority-flood":
            s = h2()
            try:
                s.sendall(frame(PRIORITY, 0, 1, struct.pack(">IB", 0, 15)) * 100000)
            except OSError:
                pass
            watch(s, started)
        elif attack == "h2-ping-flood":
            s = h2()
            try:
                s.sendall(frame(PING, 0, 0, b"12345678") * 100000)
            except OSError:
                pass
            watch(s, started)
        elif attack == "hpack-bomb":
            # A 4,000-byte field enters the HPACK table on stream 1; stream 3 refers to it 4,000 times: 4 KB on the
            # wire, 16 MB decoded.
            s = h2()
            encoder = Encoder()
            bomb = ("x-bomb", "a" * 4000)
            s.sendall(frame(HEADERS, 5, 1, request_block(encoder, "GET", "/healthz", [bomb])))
            s.sendall(frame(HEADERS, 5, 3, request_block(encoder, "GET", "/healthz", [bomb] * 4000)))
            watch(s, started, answered=(1,))
        elif attack in ("max-connections", "max-connections-per-address"):
            # Holds `allowed` keep-alive connections that each got an answer; one more is closed unanswered; once
            # one of the held ones closes, a new one is served again.
            allowed = int(sys.argv[5])
            held = [connect() for _ in range(allowed)]
            for s in held:
                status = http1_get(s)
                if status != "HTTP/1.1 200 OK":
                    done("failed", started, status="held connection answered " + status)
            extra = connect()
            refused = http1_get(extra) == "closed"
            held.pop().close()
            after = "closed"
            while time.monotonic() - started < limit and after == "closed":
                time.sleep(0.1)
                after = http1_get(connect())
            done("ok", started, refused=refused, afterClose=after)
        else:
            sys.exit("unknown attack " + attack)
        """#
}
