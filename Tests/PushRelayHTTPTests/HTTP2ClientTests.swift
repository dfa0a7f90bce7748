import Foundation
import HTTPTypes
import NIOCore
import NIOPosix
import TestSupport
import Testing

@testable import PushRelayHTTP

/// `HTTP2Client` against our server and against nghttpd.
@Suite(.serialized) struct HTTP2ClientTests {
    @Test func concurrentRequestsAgainstOurServer() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let client = try await HTTP2Client.connect(host: "127.0.0.1", port: server.port)
        try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<100 {
                group.addTask {
                    if index % 2 == 0 {
                        let response = try await client.execute(
                            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/healthz"))
                        #expect(response.head.status == .ok)
                        return String(buffer: try await response.body.collect(upTo: 1024))
                    }
                    let response = try await client.execute(
                        HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/echo"),
                        body: ByteBuffer(string: "body \(index)"))
                    return String(buffer: try await response.body.collect(upTo: 1024))
                }
            }
            var bodies: [String] = []
            for try await body in group { bodies.append(body) }
            #expect(bodies.count == 100)
            #expect(bodies.filter { $0 == #"{"status":"ok"}"# }.count == 50)
            #expect(Set(bodies.filter { $0.hasPrefix("body ") }).count == 50)
        }
        await client.close()
    }

    /// The server's SETTINGS prove it speaks HTTP/2 before any answer (what keeps the client library's transport
    /// from giving HTTP/2 up when a first request stalls); a server that says nothing proves nothing.
    @Test func serverSpokeHTTP2OnceItsSettingsArrive() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let client = try await HTTP2Client.connect(host: "127.0.0.1", port: server.port)
        for _ in 0..<100 where !client.serverSpokeHTTP2 { try await Task.sleep(for: .milliseconds(50)) }
        #expect(client.serverSpokeHTTP2 && !client.isTLS)
        await client.close()

        // A listener that accepts and never writes.
        let silent = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(silent.localAddress?.port)
        let quiet = try await HTTP2Client.connect(host: "127.0.0.1", port: port)
        try await Task.sleep(for: .milliseconds(200))
        #expect(!quiet.serverSpokeHTTP2)
        await quiet.close()
        try await silent.close()
    }

    @Test func streamingResponseIsReadIncrementally() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let client = try await HTTP2Client.connect(host: "127.0.0.1", port: server.port)
        let response = try await client.execute(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/events?count=5&interval=20"))
        #expect(response.head.headerFields[.contentType] == "text/event-stream")
        var events: [String] = []
        for try await chunk in response.body { events.append(String(buffer: chunk)) }
        #expect(events == (0..<5).map { "data: event \($0)\n\n" })
        // Meanwhile-style check: the connection still takes requests.
        let health = try await client.execute(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/healthz"))
        #expect(health.head.status == .ok)
        await client.close()
    }

    @Test func cancellingAResponseResetsOnlyItsStream() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let client = try await HTTP2Client.connect(host: "127.0.0.1", port: server.port)
        let response = try await client.execute(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/hold"))
        let body = response.body
        // A reader waiting for more is woken by the cancel.
        let reader = Task { () -> Result<[String], any Error> in
            var chunks: [String] = []
            do {
                for try await chunk in body { chunks.append(String(buffer: chunk)) }
                return .success(chunks)
            } catch {
                return .failure(error)
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        body.cancel()
        let outcome = await reader.value
        guard case .failure(let error) = outcome else {
            Issue.record("the body ended without an error: \(outcome)")
            return
        }
        #expect(error is HTTPTransportError)
        // The server's handler saw its stream close; the connection goes on serving.
        for _ in 0..<200 where server.probe.streamsClosed == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.probe.streamsClosed == 1)
        #expect(client.isActive)
        let health = try await client.execute(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/healthz"))
        #expect(health.head.status == .ok)
        await client.close()
    }

    @Test func errorStatusAndUnknownRoute() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let client = try await HTTP2Client.connect(host: "127.0.0.1", port: server.port)
        let failed = try await client.execute(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/fail"))
        #expect(failed.head.status == .badRequest)
        #expect(String(buffer: try await failed.body.collect(upTo: 100)) == "nope\n")
        let missing = try await client.execute(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/missing"))
        #expect(missing.head.status == .notFound)
        let wrongMethod = try await client.execute(HTTPRequest(method: .delete, scheme: nil, authority: nil, path: "/healthz"))
        #expect(wrongMethod.head.status == .methodNotAllowed)
        await client.close()
    }

    @Test func connectionRefusedThrows() async throws {
        await #expect(throws: (any Error).self) {
            _ = try await HTTP2Client.connect(host: "127.0.0.1", port: 1)
        }
    }

    @Test
    func againstNghttpd() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("nghttpd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let big = String(repeating: "0123456789abcdef", count: 64 * 1024)  // 1 MiB: several windows' worth
        try big.write(to: root.appendingPathComponent("big.txt"), atomically: true, encoding: .utf8)
        try "hello".write(to: root.appendingPathComponent("small.txt"), atomically: true, encoding: .utf8)
        let port = try TestPostgres.freePort()
        let nghttpd = Process()
        // Through ChildProcess.configure: spawned from a pool thread, the child inherits its blocked signals, and
        // nghttpd started through `env` ignored the SIGTERM of `terminate()` and outlived every test run.
        ChildProcess.configure(nghttpd, "nghttpd", ["--no-tls", "-d", root.path, String(port)])
        nghttpd.standardOutput = FileHandle.nullDevice
        nghttpd.standardError = FileHandle.nullDevice
        try nghttpd.run()
        defer { nghttpd.terminate() }
        var client: HTTP2Client?
        for _ in 0..<50 {
            client = try? await HTTP2Client.connect(host: "127.0.0.1", port: port)
            if client != nil { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let connected = try #require(client)
        let small = try await connected.execute(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/small.txt"))
        #expect(small.head.status == .ok)
        #expect(String(buffer: try await small.body.collect(upTo: 100)) == "hello")
        async let first = connected.execute(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/big.txt"))
        async let second = connected.execute(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/big.txt"))
        let bodies = try await [first.body.collect(upTo: 2 << 20), second.body.collect(upTo: 2 << 20)]
        #expect(bodies.allSatisfy { $0.readableBytes == big.utf8.count })
        let missing = try await connected.execute(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/nope"))
        #expect(missing.head.status == .notFound)
        await connected.close()
    }
}
