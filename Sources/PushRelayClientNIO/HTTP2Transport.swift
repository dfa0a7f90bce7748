import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOPosix
public import NIOCore
public import PushRelayClient
import PushRelayHTTP

/// The default transport: one long-lived HTTP/2 connection (PushRelayHTTP's `HTTP2Client`, libnghttp2) carries the
/// device's stream and, as further streams of the same connection, its acknowledgements.
///
/// `http://` URLs speak h2c with prior knowledge; `https://` URLs put the configuration's TLS handler first and
/// need ALPN `h2`. When the server offers no HTTP/2 (ALPN settles on `http/1.1`, or a cleartext server answers the
/// HTTP/2 preface with something that is not HTTP/2, or does not answer it at all), the transport switches to
/// ``HTTP1Transport`` for good. A server known to speak HTTP/2 — it answered over HTTP/2 before, ALPN chose `h2`,
/// or it sent its SETTINGS — is never switched by later failures (a server restarting or stalled).
///
/// A connection is opened on the first request and replaced when it is lost. Leaving a stream before its body
/// ended resets just that stream (`RST_STREAM`), so the connection serves the next one without a new handshake;
/// a heartbeat timeout instead closes the connection, since a silent connection is dead anyway. Reads have
/// deadlines (the idle timeout for the stream's body, which starts once the head arrived;
/// ``HTTP1Transport/requestTimeout`` for everything else); a deadline that passes closes the connection, which
/// ends the pending read.
///
/// ```swift
/// let transport = try HTTP2Transport(configuration: configuration,
///                                    tlsHandlerFactory: { host in tls.makeHandler(serverHostname: host) })
/// let client = try PushClient(configuration: configuration, transport: transport)
/// ```
public final class HTTP2Transport: PushTransport {
    /// Makes the TLS channel handler for a connection to the given host name (used for SNI and verification).
    ///
    /// The transport adds the handler first in the pipeline of every `https` connection. It is the seam where the
    /// PushRelayTLS handler (OpenSSL) plugs in; without it, `https` URLs are refused. A factory that throws fails
    /// the request with `PushClientError.Code.tlsNotConfigured`, which ends `PushClient.run(onMessage:)`: retrying
    /// would call the factory again to the same end.
    public typealias TLSHandlerFactory = @Sendable (_ hostname: String) throws -> any ChannelHandler

    /// The states of the transport's one connection.
    private enum Connection {
        case http2(HTTP2Client)
        case http1
    }

    private let host: String
    private let port: Int
    private let requestTimeout: Duration
    private let connectTimeout: Duration
    private let clientConfiguration: HTTP2Client.Configuration
    private let group: any EventLoopGroup
    private let fallback: HTTP1Transport
    private let pool: ConnectionPool

    /// Creates the transport for the configuration's server URL. Opens no connection.
    ///
    /// - Parameters:
    ///   - tlsHandlerFactory: Makes the TLS handler of `https` connections (e.g. PushRelayTLS's
    ///     `TLSClientContext.makeHandler(serverHostname:)`, with ALPN `h2` and `http/1.1`).
    ///   - group: The event loops the connections run on; `nil` for SwiftNIO's shared singleton group.
    /// - Throws: `PushClientError` when the URL is not `http(s)://host[:port]` or is `https` without a TLS factory.
    public init(
        configuration: PushClientConfiguration, tlsHandlerFactory: TLSHandlerFactory? = nil,
        group: (any EventLoopGroup)? = nil
    ) throws {
        let group = group ?? MultiThreadedEventLoopGroup.singleton
        let fallback = try HTTP1Transport(configuration: configuration, tlsHandlerFactory: tlsHandlerFactory,
                                          group: group)
        self.fallback = fallback
        self.host = fallback.host
        self.port = fallback.port
        self.requestTimeout = fallback.requestTimeout
        self.connectTimeout = fallback.connectTimeout
        self.group = group
        var clientConfiguration = HTTP2Client.Configuration()
        clientConfiguration.connectTimeout = .nanoseconds(fallback.connectTimeout.nanoseconds)
        if let factory = fallback.tlsHandlerFactory {
            let host = fallback.host
            clientConfiguration.tlsHandlerFactory = {
                do {
                    return try factory(host)
                } catch {
                    return FactoryFailureHandler(error: error)
                }
            }
        }
        self.clientConfiguration = clientConfiguration
        self.pool = ConnectionPool()
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard let (client, response) = try await open(request) else { return try await fallback.send(request) }
        let body = response.body
        let buffer: ByteBuffer
        do {
            buffer = try await Self.withDeadline(
                requestTimeout,
                onTimeout: { await self.pool.discard(client) },
                timeoutError: PushClientError(code: .connectionClosed, message: "HTTP/2: response timed out")
            ) {
                try await body.collect(upTo: HTTP1Transport.maximumResponseSize)
            }
        } catch let error as HTTPTransportError {
            throw PushClientError(code: .connectionClosed, message: "HTTP/2: \(error)")
        } catch is HTTPError {
            throw PushClientError(code: .invalidResponse, message: "response body too large")
        }
        return TransportResponse(status: response.head.status.code, headerFields: response.head.headerFields,
                                 body: Array(buffer.readableBytesView))
    }

    public func withStreamingResponse(
        to request: TransportRequest,
        idleTimeout: Duration,
        _ body: (_ head: TransportResponseHead, _ reader: TransportBodyReader) async throws -> Void
    ) async throws {
        guard let (client, response) = try await open(request) else {
            return try await fallback.withStreamingResponse(to: request, idleTimeout: idleTimeout, body)
        }
        let responseBody = response.body
        let pool = self.pool
        var ended = false
        let reader = TransportBodyReader {
            guard !ended else { return nil }
            let chunk: ByteBuffer?
            do {
                chunk = try await Self.withDeadline(
                    idleTimeout,
                    onTimeout: { await pool.discard(client) },
                    timeoutError: PushClientError(code: .heartbeatTimeout,
                                                  message: "no data or heartbeat within the heartbeat timeout")
                ) {
                    var iterator = responseBody.makeAsyncIterator()
                    return try await iterator.next()
                }
            } catch let error as HTTPTransportError {
                throw PushClientError(code: .connectionClosed, message: "HTTP/2: \(error)")
            }
            guard let chunk else {
                ended = true
                return nil
            }
            return Array(chunk.readableBytesView)
        }
        do {
            // The HEADERS frame's regular fields; HTTPTypes keeps `:status` out of `headerFields`.
            try await body(TransportResponseHead(status: response.head.status.code,
                                                 headerFields: response.head.headerFields), reader)
        } catch {
            if !ended { responseBody.cancel() }
            throw error
        }
        if !ended { responseBody.cancel() }
    }

    /// What the transport speaks now: `h2` on an open HTTP/2 connection, `http/1.1` after falling back, else `nil`.
    public var negotiatedProtocol: String? {
        get async { await pool.negotiatedProtocol }
    }

    /// How many HTTP/2 connections the transport has opened so far.
    public var connectionsOpened: Int {
        get async { await pool.opened }
    }

    public func shutdown() async {
        await pool.shutdown()
        await fallback.shutdown()
    }

    // MARK: Connections

    private func connection() async throws -> Connection {
        let host = self.host
        let port = self.port
        let configuration = clientConfiguration
        let group = self.group
        return try await pool.connection {
            try await HTTP2Client.connect(host: host, port: port, configuration: configuration, eventLoopGroup: group)
        }
    }

    /// Sends `request` on the HTTP/2 connection (opening one if needed) and waits for the response head; `nil` when
    /// the transport fell back to HTTP/1.1.
    ///
    /// A connection that fails before it ever answered is retried once on a new connection; when that one fails
    /// the same way too, the server does not speak HTTP/2 (an HTTP/1.1 server answers the h2c preface with a 400
    /// and closes) and the transport falls back. A refused TCP connection is an ordinary failure.
    private func open(_ request: TransportRequest) async throws -> (HTTP2Client, HTTPClientResponse)? {
        let head = HTTPRequest(method: request.method, scheme: nil, authority: nil, path: request.path,
                               headerFields: request.headerFields)
        let requestBody = request.body.map { ByteBuffer(bytes: $0) }
        var lastError: (any Error)?
        for _ in 0..<3 {
            guard case .http2(let client) = try await connection() else { return nil }
            // A cleartext HTTP/1.1 server may sit on the h2c preface without answering: a new connection gets the
            // connect timeout to show it speaks HTTP/2 (its SETTINGS), and not doing so counts as not speaking it.
            // A connection whose server did gets the rest of the request timeout for its first answer (a server
            // busy catching up after a stall is slow, not HTTP/1.1).
            let confirmed = await pool.isConfirmed(client)
            let extraForHTTP2 = confirmed ? .zero : max(requestTimeout - connectTimeout, .zero)
            do {
                let response = try await Self.withDeadline(
                    confirmed ? requestTimeout : connectTimeout,
                    extendedBy: { client.showedHTTP2 ? extraForHTTP2 : .zero },
                    onTimeout: { await self.pool.discard(client) },
                    timeoutError: HTTPTransportError.timeout("no response head within the request timeout")
                ) {
                    try await client.execute(head, body: requestBody)
                }
                await pool.confirm(client)
                return (client, response)
            } catch let error as HTTPTransportError {
                lastError = error
                switch await pool.failed(client, error: error, confirmed: confirmed) {
                case .retry: continue
                case .fallBack: return nil
                case .fail: break
                }
                break
            }
        }
        throw PushClientError(code: .connectionClosed, message: "HTTP/2: \(lastError.map { "\($0)" } ?? "failed")")
    }

    // MARK: Deadlines

    private enum RaceState { case running, finished, timedOut }
    private enum RaceOutcome<Value: Sendable>: Sendable {
        case value(Value)
        case timer
    }

    /// Runs `operation` with a deadline. `operation` need not react to cancellation: when the deadline passes (or
    /// the calling task is cancelled) `onTimeout` runs, and it must make `operation` end (by closing the
    /// connection). Throws `timeoutError` after a deadline, `CancellationError` after a cancellation.
    ///
    /// - Parameter extendedBy: Asked once when `timeout` has passed: how much longer `operation` may take (`.zero`
    ///   for none).
    static func withDeadline<Value: Sendable>(
        _ timeout: Duration,
        extendedBy: @escaping @Sendable () -> Duration = { .zero },
        onTimeout: @escaping @Sendable () async -> Void,
        timeoutError: any Error,
        _ operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        typealias Outcome = Result<RaceOutcome<Value>, any Error>
        let state = NIOLockedValueBox(RaceState.running)
        let (first, second) = await withTaskGroup(of: Outcome.self, returning: (Outcome, Outcome?).self) { group in
            group.addTask { () async -> Outcome in
                let result: Outcome
                do {
                    result = .success(.value(try await operation()))
                } catch {
                    result = .failure(error)
                }
                state.withLockedValue { if $0 == .running { $0 = .finished } }
                return result
            }
            group.addTask { () async -> Outcome in
                try? await Task.sleep(for: timeout)
                let more = Task.isCancelled ? .zero : extendedBy()
                if more > .zero { try? await Task.sleep(for: more) }
                let fire = state.withLockedValue { state -> Bool in
                    guard state == .running else { return false }
                    state = .timedOut
                    return true
                }
                if fire { await onTimeout() }
                return .success(.timer)
            }
            let first: Outcome = await group.next()!
            group.cancelAll()
            guard case .success(.timer) = first else { return (first, nil) }
            let second: Outcome = await group.next()!
            return (first, second)
        }
        let timedOut = state.withLockedValue { $0 == .timedOut }
        let outcome = second ?? first
        if !timedOut, case .success(.value(let value)) = outcome { return value }
        if timedOut { throw Task.isCancelled ? CancellationError() : timeoutError }
        if case .failure(let error) = outcome { throw error }
        throw timeoutError
    }
}

extension HTTP2Transport {
    /// The transport's one HTTP/2 connection: opened on demand (concurrent callers share one attempt), replaced
    /// when lost, and given up for HTTP/1.1 when the server offers no HTTP/2.
    private actor ConnectionPool {
        private enum State {
            case idle
            case connecting([CheckedContinuation<Connection, any Error>])
            case connected(HTTP2Client, confirmed: Bool)
            case http1
            case shutDown
        }

        private var state = State.idle
        private(set) var opened = 0
        /// Failures of connections that never answered, in a row.
        private var unconfirmedFailures = 0
        /// A connection of this transport has answered over HTTP/2: the server speaks it, and a later connection
        /// that fails (a restarting or stalled server) is no reason to fall back.
        private var spokeHTTP2 = false

        var negotiatedProtocol: String? {
            switch state {
            case .connected: "h2"
            case .http1: "http/1.1"
            case .idle, .connecting, .shutDown: nil
            }
        }

        func connection(_ connect: @Sendable () async throws -> HTTP2Client) async throws -> Connection {
            switch state {
            case .connected(let client, _) where client.isActive:
                return .http2(client)
            case .http1:
                return .http1
            case .shutDown:
                throw PushClientError(code: .connectionClosed, message: "the transport was shut down")
            case .connecting:
                return try await withCheckedThrowingContinuation { continuation in
                    if case .connecting(var waiters) = state {
                        waiters.append(continuation)
                        state = .connecting(waiters)
                    } else {
                        continuation.resume(throwing: PushClientError(code: .connectionClosed,
                                                                      message: "HTTP/2 connection attempt ended"))
                    }
                }
            case .idle, .connected:
                state = .connecting([])
                let result: Result<Connection, any Error>
                do {
                    result = .success(.http2(try await connect()))
                } catch let error as HTTPTransportError where error == .protocolError("") {
                    result = .success(.http1)  // TLS: ALPN settled on something other than h2.
                } catch let error as PushClientError {
                    // The TLS handler factory threw (``FactoryFailureHandler``): `tlsNotConfigured` as it is, so
                    // that the client does not take it for a connection that may come back.
                    result = .failure(error)
                } catch {
                    result = .failure(PushClientError(code: .connectionClosed, message: "HTTP/2 connect: \(error)"))
                }
                let waiters: [CheckedContinuation<Connection, any Error>]
                if case .connecting(let pending) = state { waiters = pending } else { waiters = [] }
                if case .shutDown = state {
                    if case .success(.http2(let client)) = result { await client.close() }
                    let error = PushClientError(code: .connectionClosed, message: "the transport was shut down")
                    for waiter in waiters { waiter.resume(throwing: error) }
                    throw error
                }
                switch result {
                case .success(.http2(let client)):
                    opened += 1
                    state = .connected(client, confirmed: false)
                case .success(.http1):
                    state = .http1
                case .failure:
                    state = .idle
                }
                for waiter in waiters { waiter.resume(with: result) }
                return try result.get()
            }
        }

        func isConfirmed(_ client: HTTP2Client) -> Bool {
            if case .connected(let current, true) = state, current === client { return true }
            return false
        }

        /// `client` answered a request: it speaks HTTP/2.
        func confirm(_ client: HTTP2Client) {
            if case .connected(let current, false) = state, current === client {
                state = .connected(client, confirmed: true)
                unconfirmedFailures = 0
                spokeHTTP2 = true
            }
        }

        typealias FailureAction = HTTP2Transport.ConnectionFailureAction

        /// A request on `client` failed before its response head. On an answering connection — or any connection
        /// once one has answered over HTTP/2 — a closed connection is retried and anything else fails (the client's
        /// reconnection takes it from there). On a connection to a server never heard over HTTP/2, a timeout means
        /// it does not speak HTTP/2; another failure asks for a retry on a new connection the first time and falls
        /// back the second time.
        func failed(_ client: HTTP2Client, error: HTTPTransportError, confirmed: Bool) async -> FailureAction {
            if case .connected(let current, _) = state, current === client { state = .idle }
            await client.close()
            if case .shutDown = state { return .fail }
            let spoke = confirmed || spokeHTTP2 || client.showedHTTP2
            if !spoke { unconfirmedFailures += 1 }
            let action = HTTP2Transport.failureAction(
                error: error, spokeHTTP2: spoke, unconfirmedFailures: unconfirmedFailures)
            if action == .fallBack { state = .http1 }
            return action
        }

        /// Closes `client` and forgets it if it is the current connection.
        func discard(_ client: HTTP2Client) async {
            if case .connected(let current, _) = state, current === client { state = .idle }
            await client.close()
        }

        func shutdown() async {
            let previous = state
            state = .shutDown
            switch previous {
            case .connected(let client, _):
                await client.close()
            case .connecting(let waiters):
                let error = PushClientError(code: .connectionClosed, message: "the transport was shut down")
                for waiter in waiters { waiter.resume(throwing: error) }
            case .idle, .http1, .shutDown:
                break
            }
        }
    }
}

extension HTTP2Transport {
    /// What to do after a request failed before its response head (``failureAction(error:spokeHTTP2:unconfirmedFailures:)``).
    enum ConnectionFailureAction: Equatable { case retry, fallBack, fail }

    /// What a request that failed before its response head means for the transport. A server known to speak HTTP/2
    /// — it answered before, ALPN chose `h2`, or it sent its SETTINGS — is never given up for HTTP/1.1 (a stall or
    /// a restart is not a protocol): a closed connection is retried, anything else fails and the client's
    /// reconnection takes it from there. A cleartext server never heard over HTTP/2 does not speak it when it lets
    /// the preface time out, or when a second connection fails too (an HTTP/1.1 server answers the preface with a
    /// 400 and closes); the first other failure is retried.
    static func failureAction(
        error: HTTPTransportError, spokeHTTP2: Bool, unconfirmedFailures: Int
    ) -> ConnectionFailureAction {
        if spokeHTTP2 { return error == .connectionClosed() ? .retry : .fail }
        return error == .timeout("") || unconfirmedFailures >= 2 ? .fallBack : .retry
    }
}

extension HTTP2Client {
    /// The server has shown on this connection that it speaks HTTP/2: ALPN chose `h2`, or it sent its SETTINGS.
    fileprivate var showedHTTP2: Bool { isTLS || serverSpokeHTTP2 }
}

/// Stands in for the TLS handler when the factory threw: fails the connection with the factory's error.
private final class FactoryFailureHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    private let error: any Error & Sendable

    init(error: any Error) {
        self.error = PushClientError(code: .tlsNotConfigured, message: "TLS handler: \(error)")
    }

    func channelActive(context: ChannelHandlerContext) {
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }
}

extension Duration {
    /// The duration in whole nanoseconds.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
