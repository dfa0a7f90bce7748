import Foundation

/// A Python `h2` client that parks request bodies: it opens `connections` HTTP/2 connections with `streams` POSTs
/// each that never end, and sends whatever the server's flow-control windows allow until nothing has moved for a
/// second (or for 10 s when nothing moved at all). What it reports is how many body bytes the server let it send
/// (`first`); with `reset`, it then resets the streams of the connection that holds the most of the server's budget
/// (the one granted the most window) and reports how many more bytes the other connections could send (`more`).
public enum UnfinishedUploads {
    public struct Sent: Sendable {
        public var first: Int
        public var more: Int
    }

    /// Runs the client against 127.0.0.1:`port`; `headers` are added to every request's head.
    public static func run(
        port: Int, path: String, headers: [(String, String)] = [], connections: Int, streams: Int, size: Int,
        reset: Bool
    ) async throws -> Sent {
        let extra = headers.map { "('\($0.0)', '\($0.1)')" }.joined(separator: ", ")
        let script = """
            import socket, sys, time
            import h2.connection, h2.config
            PORT = int(sys.argv[1])
            pairs, lefts = [], []
            for _ in range(\(connections)):
                sock = socket.create_connection(('127.0.0.1', PORT))
                conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
                conn.initiate_connection()
                ids = []
                for _ in range(\(streams)):
                    sid = conn.get_next_available_stream_id()
                    conn.send_headers(sid, [(':method', 'POST'), (':path', '\(path)'), (':scheme', 'http'), (':authority', 'x'), ('content-type', 'application/json'), \(extra)])
                    ids.append(sid)
                sock.sendall(conn.data_to_send())
                pairs.append((conn, sock, ids))
                lefts.append(dict((sid, \(size)) for sid in ids))
            per = [0] * len(pairs)  # bytes sent on each connection
            def pump():
                sent = 0
                for k, ((conn, sock, ids), left) in enumerate(zip(pairs, lefts)):
                    for sid in ids:
                        while left[sid] > 0:
                            room = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size, left[sid])
                            if room <= 0:
                                break
                            conn.send_data(sid, b' ' * room)
                            left[sid] -= room
                            sent += room
                            per[k] += room
                    out = conn.data_to_send()
                    if out:
                        sock.sendall(out)
                return sent
            def settle():
                # Until nothing has moved for a second after something moved, or for 10 s if nothing does: under
                # load the server's window updates can take longer than a second to come.
                total, idle_since = 0, time.time()
                while time.time() - idle_since < (1.0 if total else 10.0):
                    moved = pump()
                    total += moved
                    if moved:
                        idle_since = time.time()
                    for conn, sock, _ in pairs:
                        sock.settimeout(0.05)
                        try:
                            data = sock.recv(65536)
                        except socket.timeout:
                            continue
                        if data:
                            conn.receive_data(data)
                            out = conn.data_to_send()
                            if out:
                                sock.sendall(out)
                return total
            first = settle()
            more = 0
            if \(reset ? "True" : "False"):
                # Reset the connection that holds the most of the budget, whatever order the server read the
                # connections in: the one the server granted the most window to (what it sent plus what it may
                # still send is its initial window plus every WINDOW_UPDATE, i.e. plus what the server took).
                k = max(range(len(pairs)), key=lambda i: pairs[i][0].outbound_flow_control_window + per[i])
                conn, sock, ids = pairs[k]
                for sid in ids:
                    conn.reset_stream(sid, 8)
                    lefts[k][sid] = 0
                sock.sendall(conn.data_to_send())
                more = settle()
            print(first, more)
            """
        let result = try await ChildProcess.run("python3", ["-c", script, String(port)], timeout: .seconds(120))
        let numbers = result.stdout.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        guard result.status == 0, numbers.count == 2 else {
            throw UnfinishedUploadsError(description: "unexpected output: \(result.combined)")
        }
        return Sent(first: numbers[0], more: numbers[1])
    }
}

/// The upload client did not report its counts.
public struct UnfinishedUploadsError: Error, CustomStringConvertible {
    public var description: String
}
