import ArgumentParser
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPTypes
import Logging
import NIOCore
import PushRelayHTTP
import ServiceLifecycle
import UnixSignals

/// `pushrelay serve`: runs the daemon's HTTP listener until SIGTERM or SIGINT, then drains gracefully.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the relay daemon."
    )

    @Option(name: .long, help: "Address to listen on, HOST:PORT (port 0 picks a free port). Repeatable.")
    var listen: [String] = ["127.0.0.1:8080"]

    @Option(name: .long, help: "Log level (trace, debug, info, notice, warning, error, critical).")
    var logLevel: String = "info"

    @Flag(name: .customLong("debug-bench-routes"), help: .hidden)
    var benchRoutes = false

    func run() async throws {
        var logger = Logger(label: "pushrelay")
        guard let level = Logger.Level(rawValue: logLevel) else { throw ValidationError("unknown log level \(logLevel)") }
        logger.logLevel = level
        let listeners = try listen.map(Self.parseListener)
        let router = Self.makeRouter(benchRoutes: benchRoutes)
        let server = HTTPServer(listeners: listeners, responder: router, logger: logger)
        let addresses = try await server.start()
        for address in addresses {
            print("pushrelay listening on http://\(Self.format(address))")
        }
        fflush(nil)  // flushes stdout: tests read the line through a pipe
        let group = ServiceGroup(
            services: [HTTPServerService(server: server)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        try await group.run()
    }

    /// The production routes. The relay's routes are added here.
    static func makeRouter(benchRoutes: Bool) -> HTTPRouter {
        let router = HTTPRouter()
        router.add(.get, "/healthz", .immediate { _, _ in healthResponse })
        if benchRoutes {
            // Hidden, for Benchmarks/http2.sh only: answers a POST with a small fixed body.
            router.add(.post, "/debug/echo", .immediate { _, body in
                HTTPServerResponse(status: .ok, headerFields: [.contentType: "application/octet-stream"], body: .bytes(body))
            })
        }
        return router
    }

    private static let healthResponse: HTTPServerResponse = {
        var body = ByteBuffer()
        body.writeString(#"{"status":"ok"}"#)
        return HTTPServerResponse(status: .ok, headerFields: [.contentType: "application/json"], body: .bytes(body))
    }()

    static func parseListener(_ text: String) throws -> HTTPServer.Listener {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { throw ValidationError("--listen wants HOST:PORT, got \(text)") }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.isEmpty { host = "0.0.0.0" }
        return HTTPServer.Listener(host: host, port: port)
    }

    static func format(_ address: SocketAddress) -> String {
        let ip = address.ipAddress ?? "?"
        let port = address.port ?? 0
        if case .v6 = address { return "[\(ip)]:\(port)" }
        return "\(ip):\(port)"
    }
}

/// Runs an `HTTPServer` as a lifecycle service: graceful shutdown drains it.
struct HTTPServerService: Service {
    let server: HTTPServer

    func run() async throws {
        try await withGracefulShutdownHandler {
            try await server.run()
        } onGracefulShutdown: {
            server.beginShutdown()
        }
    }
}
