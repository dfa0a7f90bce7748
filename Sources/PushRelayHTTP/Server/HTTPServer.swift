public import Logging
public import NIOCore
import NIOConcurrencyHelpers
public import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP server: HTTP/2 (prior knowledge, `Upgrade: h2c`, or `h2` after TLS) and HTTP/1.1 on the same
/// listeners, serving one `HTTPServerResponder`.
///
/// ```swift
/// let server = HTTPServer(listeners: [.init(host: "127.0.0.1", port: 0)], responder: router, logger: logger)
/// let addresses = try await server.start()
/// …
/// await server.shutdown()   // stop accepting, GOAWAY, drain open streams until the drain timeout
/// ```
///
/// `run()` fits swift-service-lifecycle: wrap it as
/// `try await withGracefulShutdownHandler { try await server.run() } onGracefulShutdown: { server.beginShutdown() }`.
public final class HTTPServer: Sendable {
    private enum State {
        case idle
        case starting
        case running(listeners: [any Channel])
        case shuttingDown
        case stopped
    }

    private struct Shared {
        var state = State.idle
        var addresses: [SocketAddress] = []
        var connections: [ObjectIdentifier: any Channel] = [:]
        /// Open connections by peer IP address, kept only when a per-address limit is set.
        var connectionsByAddress: [String: Int] = [:]
        /// Connections closed at accept because a limit was reached.
        var refusedConnections = 0
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// The limits this server runs with.
    public let configuration: Configuration
    /// The addresses it listens on, as configured (see `localAddresses` for the bound ones).
    public let listeners: [Listener]
    private let group: any EventLoopGroup
    private let connectionShared: HTTPServerShared
    private let logger: Logger
    private let shared = NIOLockedValueBox(Shared())

    /// Creates a server; nothing is bound until `start()` or `run()`.
    ///
    /// - Parameters:
    ///   - configuration: limits and timeouts.
    ///   - listeners: where to accept connections; at least one.
    ///   - responder: routes each request head to a handler (usually an `HTTPRouter`).
    ///   - eventLoopGroup: the loops that run connections; by default NIO's shared group.
    ///   - logger: connection-level events are logged at `debug`, the bound addresses at `info`.
    public init(
        configuration: Configuration = Configuration(),
        listeners: [Listener],
        responder: any HTTPServerResponder,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger
    ) {
        precondition(!listeners.isEmpty, "HTTPServer needs at least one listener")
        self.configuration = configuration
        self.listeners = listeners
        self.group = eventLoopGroup
        self.logger = logger
        self.connectionShared = HTTPServerShared(responder: responder, configuration: configuration, logger: logger)
    }

    /// The bound addresses, in listener order (empty before `start()`).
    public var localAddresses: [SocketAddress] {
        shared.withLockedValue { $0.addresses }
    }

    /// Binds every listener and starts accepting; returns the bound addresses in listener order (a port `0`
    /// listener reports the port it got). Throws if a listener cannot bind; the others are closed then.
    @discardableResult
    public func start() async throws -> [SocketAddress] {
        try shared.withLockedValue { shared in
            guard case .idle = shared.state else { throw HTTPTransportError.protocolError("server already started") }
            shared.state = .starting
        }
        var bound: [any Channel] = []
        do {
            for listener in listeners {
                bound.append(try await bind(listener))
            }
        } catch {
            for channel in bound { try? await channel.close() }
            shared.withLockedValue { $0.state = .stopped }
            throw error
        }
        let addresses = bound.compactMap(\.localAddress)
        let stillStarting = shared.withLockedValue { shared -> Bool in
            guard case .starting = shared.state else { return false }
            shared.state = .running(listeners: bound)
            shared.addresses = addresses
            return true
        }
        if !stillStarting {
            for channel in bound { try? await channel.close() }
            throw HTTPTransportError.connectionClosed("server shut down while starting")
        }
        for address in addresses {
            logger.info("listening", metadata: ["http.address": "\(address)"])
        }
        return addresses
    }

    /// Starts (when not started yet) and serves until `shutdown()`/`beginShutdown()` completes or the task is
    /// cancelled; cancellation shuts down gracefully.
    public func run() async throws {
        if case .idle = shared.withLockedValue({ $0.state }) {
            try await start()
        }
        await withTaskCancellationHandler {
            await waitUntilStopped()
        } onCancel: {
            beginShutdown()
        }
    }

    /// Shuts down gracefully and returns when every connection has closed: stops accepting, sends GOAWAY (HTTP/2)
    /// or `connection: close` (HTTP/1.1), lets open requests and streams finish, and closes what is still open
    /// after `configuration.drainTimeout`. Streaming handlers see `waitUntilClosed()` return.
    public func shutdown() async {
        beginShutdown()
        await waitUntilStopped()
    }

    /// Starts a graceful shutdown without waiting for it (for a signal or lifecycle handler).
    public func beginShutdown() {
        let (listeners, connections) = shared.withLockedValue { shared -> ([any Channel], [any Channel]) in
            switch shared.state {
            case .idle, .starting:
                shared.state = .stopped
                let waiters = shared.stopWaiters
                shared.stopWaiters = []
                for waiter in waiters { waiter.resume() }
                return ([], [])
            case .running(let listeners):
                shared.state = .shuttingDown
                return (listeners, Array(shared.connections.values))
            case .shuttingDown, .stopped:
                return ([], [])
            }
        }
        guard case .shuttingDown = shared.withLockedValue({ $0.state }) else { return }
        logger.info("shutting down", metadata: ["http.connections": "\(connections.count)"])
        for listener in listeners { listener.close(promise: nil) }
        for connection in connections {
            connection.pipeline.fireUserInboundEventTriggered(HTTPServerConnectionEvent.drain)
        }
        let deadline = configuration.drainTimeout
        group.next().scheduleTask(in: deadline) { [self] in
            let remaining = shared.withLockedValue { Array($0.connections.values) }
            for connection in remaining { connection.close(promise: nil) }
        }
        completeShutdownIfDrained()
    }

    private func waitUntilStopped() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let stopped = shared.withLockedValue { shared -> Bool in
                if case .stopped = shared.state { return true }
                shared.stopWaiters.append(continuation)
                return false
            }
            if stopped { continuation.resume() }
        }
    }

    private func completeShutdownIfDrained() {
        let waiters = shared.withLockedValue { shared -> [CheckedContinuation<Void, Never>] in
            guard case .shuttingDown = shared.state, shared.connections.isEmpty else { return [] }
            shared.state = .stopped
            defer { shared.stopWaiters = [] }
            return shared.stopWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: Listeners and connections

    private func bind(_ listener: Listener) async throws -> any Channel {
        let connectionShared = self.connectionShared
        do {
            return try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: Int32(clamping: configuration.backlog))
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // At the open-file limit accept(2) fails with EMFILE while the listener stays readable: without a pause
            // the accept loop spins a core. Wait a little, then try again (a closed connection frees a descriptor).
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        AcceptBackoffHandler(backoffProvider: HTTPServer.acceptBackoff))
                }
            }
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            // A client that half-closes (shutdown(SHUT_WR) after its request) still reads: its end arrives as
            // `ChannelEvent.inputClosed`, and the request it sent is answered before the connection closes.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            // NIO keeps each connection's receive buffer for reuse. Its default first size, 2 KiB, is most of what an
            // idle device costs; a request head or an HTTP/2 preface fits in 512 bytes, and the allocator grows the
            // buffer for a connection that sends more (FCM bodies).
            .childChannelOption(
                .recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536))
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try self.register(channel)
                    let pipeline = channel.pipeline.syncOperations
                    if let factory = listener.tlsHandlerFactory { try pipeline.addHandler(factory()) }
                    try pipeline.addHandler(HTTPProtocolSniffer(shared: connectionShared))
                }
            }
            .bind(host: listener.host, port: listener.port)
            .get()
        } catch {
            throw HTTPServerListenError(host: listener.host, port: listener.port, underlying: error)
        }
    }

    /// How long the listener pauses accepting after accept(2) failed for lack of descriptors or memory.
    @Sendable static func acceptBackoff(_ error: IOError) -> TimeAmount? {
        switch error.errnoCode {
        case EMFILE, ENFILE, ENOBUFS, ENOMEM: .milliseconds(100)
        default: nil
        }
    }

    /// Tracks a new connection; throws (the connection is closed) when the server no longer accepts or a
    /// connection limit is reached.
    private func register(_ channel: any Channel) throws {
        let id = ObjectIdentifier(channel)
        let perAddressLimit = configuration.maxConnectionsPerAddress
        let address = perAddressLimit == nil ? nil : channel.remoteAddress?.ipAddress
        let refusal = shared.withLockedValue { shared -> (String, ConnectionEvent?)? in
            guard case .running = shared.state else { return ("server is shutting down", nil) }
            if let limit = configuration.maxConnections, shared.connections.count >= limit {
                shared.refusedConnections += 1
                return ("max_connections reached", .refusedOverLimit)
            }
            if let address, let limit = perAddressLimit {
                let count = shared.connectionsByAddress[address, default: 0]
                if count >= limit {
                    shared.refusedConnections += 1
                    return ("per-address connection limit reached", .refusedOverAddressLimit)
                }
                shared.connectionsByAddress[address] = count + 1
            }
            shared.connections[id] = channel
            return nil
        }
        let events = configuration.connectionEvents
        if let (reason, event) = refusal {
            logger.debug("connection refused", metadata: ["http.reason": "\(reason)"])
            if let event { events?(event) }
            throw HTTPTransportError.connectionClosed(reason)
        }
        events?(.opened)
        channel.closeFuture.whenComplete { [self] _ in
            events?(.closed)
            shared.withLockedValue { shared in
                _ = shared.connections.removeValue(forKey: id)
                if let address, let count = shared.connectionsByAddress[address] {
                    shared.connectionsByAddress[address] = count > 1 ? count - 1 : nil
                }
            }
            completeShutdownIfDrained()
        }
    }

    /// Connections closed at accept because `maxConnections` or `maxConnectionsPerAddress` was reached.
    public var refusedConnectionCount: Int {
        shared.withLockedValue { $0.refusedConnections }
    }

    /// The number of open connections.
    public var connectionCount: Int {
        shared.withLockedValue { $0.connections.count }
    }

    /// Bytes the server holds for its connections' outbound streams: bytes queued in streaming writers and in
    /// the channels' write buffers (test hook for bounded buffering).
    func bufferedOutboundBytes() async -> Int {
        let connections = shared.withLockedValue { Array($0.connections.values) }
        var total = 0
        for channel in connections {
            let bytes = try? await channel.eventLoop.submit {
                let pipeline = channel.pipeline.syncOperations
                var bytes = (try? channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
                if let handler = try? pipeline.handler(type: HTTP2ServerConnectionHandler.self) {
                    bytes += handler.bufferedStreamBytes
                }
                return bytes
            }.get()
            total += bytes ?? 0
        }
        return total
    }
}

/// A listener that could not be opened (the port is taken, the address is not this host's, a privileged port):
/// names the address and the reason, e.g. `cannot listen on 127.0.0.1:8080: Address already in use`.
public struct HTTPServerListenError: Error, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// The socket layer's error.
    public var underlying: any Error

    public var description: String {
        let reason = (underlying as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(underlying)"
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        return "cannot listen on \(address): \(reason)"
    }
}
