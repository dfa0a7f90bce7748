public import HTTPTypes
public import Logging
public import NIOCore
public import NIOPosix
import NIOConcurrencyHelpers

/// An HTTP/2 client connection on libnghttp2: many concurrent requests on one connection, response bodies read
/// incrementally.
///
/// Cleartext connections speak h2c with prior knowledge. With `Configuration.tlsHandlerFactory` the TLS handler
/// goes first in the pipeline and the connection is ready once it reports `TLSHandshakeCompleted` with ALPN `h2`
/// (or no ALPN).
///
/// ```swift
/// let client = try await HTTP2Client.connect(host: "127.0.0.1", port: 8080)
/// let response = try await client.execute(HTTPRequest(method: .get, scheme: "http", authority: nil, path: "/healthz"))
/// for try await chunk in response.body { … }
/// await client.close()
/// ```
public final class HTTP2Client: Sendable {
    /// Settings of a client connection.
    public struct Configuration: Sendable {
        /// The per-stream receive window (SETTINGS_INITIAL_WINDOW_SIZE): how many unread response bytes one
        /// stream may buffer. Default 1 MiB.
        public var initialWindowSize: Int = 1 << 20
        /// Largest response header block accepted. Default 64 KiB.
        public var maxHeaderListSize: Int = 64 * 1024
        /// Most concurrent streams the server may push at us; 0 since pushes are refused. Default 100.
        public var maxConcurrentStreams: Int = 100
        /// How long `connect` may take, TLS handshake included. Default 10 s.
        public var connectTimeout: TimeAmount = .seconds(10)
        /// Makes the first handler of the connection's pipeline (TLS); `nil` for cleartext h2c.
        public var tlsHandlerFactory: (@Sendable () -> any ChannelHandler)?

        /// The defaults: cleartext.
        public init() {}

        var sessionLimits: NGHTTP2SessionLimits {
            NGHTTP2SessionLimits(
                maxConcurrentStreams: maxConcurrentStreams,
                initialWindowSize: initialWindowSize,
                maxHeaderListSize: maxHeaderListSize,
                streamResetBurst: 1000,
                streamResetRatePerSecond: 33,
                maxContinuations: 8,
                maxSettings: 32,
                maxOutboundAck: 1000
            )
        }
    }

    private let channel: any Channel
    private let handler: NIOLoopBound<HTTP2ClientConnectionHandler>
    private let heardHTTP2: NIOLockedValueBox<Bool>
    private let authority: String
    private let scheme: String

    private init(
        channel: any Channel,
        handler: NIOLoopBound<HTTP2ClientConnectionHandler>,
        heardHTTP2: NIOLockedValueBox<Bool>,
        authority: String,
        scheme: String
    ) {
        self.channel = channel
        self.handler = handler
        self.heardHTTP2 = heardHTTP2
        self.authority = authority
        self.scheme = scheme
    }

    /// Connects to `host:port` and completes the HTTP/2 (and TLS) setup.
    ///
    /// - Throws: `HTTPTransportError` or the socket error when the connection or the handshake fails.
    public static func connect(
        host: String,
        port: Int,
        configuration: Configuration = Configuration(),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "pushrelay.http2client")
    ) async throws -> HTTP2Client {
        let eventLoop = eventLoopGroup.next()
        let ready = eventLoop.makePromise(of: Void.self)
        let limits = configuration.sessionLimits
        let tlsFactory = configuration.tlsHandlerFactory
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: eventLoop)
            .connectTimeout(configuration.connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tlsFactory { try pipeline.addHandler(tlsFactory()) }
                    try pipeline.addHandler(
                        HTTP2ClientConnectionHandler(
                            limits: limits, waitForTLS: tlsFactory != nil, ready: ready, logger: logger))
                }
            }
            .connect(host: host, port: port)
            .get()
        } catch {
            ready.fail(error)
            throw error
        }
        let timeout = eventLoop.scheduleTask(in: configuration.connectTimeout) {
            ready.fail(HTTPTransportError.timeout("HTTP/2 connection setup timed out"))
        }
        do {
            try await ready.futureResult.get()
            timeout.cancel()
        } catch {
            timeout.cancel()
            try? await channel.close()
            throw error
        }
        let (handler, heardHTTP2) = try await eventLoop.submit {
            let handler = try channel.pipeline.syncOperations.handler(type: HTTP2ClientConnectionHandler.self)
            return (NIOLoopBound(handler, eventLoop: eventLoop), handler.heardHTTP2)
        }.get()
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        return HTTP2Client(
            channel: channel, handler: handler, heardHTTP2: heardHTTP2, authority: authority,
            scheme: tlsFactory == nil ? "http" : "https")
    }

    /// Sends a request on a new stream and returns when the response head has arrived; the body streams on.
    ///
    /// A request without `scheme` or `authority` gets the connection's. Cancelling the task resets the stream.
    ///
    /// - Parameters:
    ///   - request: the request head.
    ///   - body: the complete request body, if any.
    /// - Throws: `HTTPTransportError.streamClosed` when the server resets the stream,
    ///   `HTTPTransportError.connectionClosed` when the connection is gone or no longer takes new streams.
    public func execute(_ request: HTTPRequest, body: ByteBuffer? = nil) async throws -> HTTPClientResponse {
        var head = request
        if head.scheme == nil { head.scheme = scheme }
        if head.authority == nil { head.authority = authority }
        if let body, head.headerFields[.contentLength] == nil {
            head.headerFields[.contentLength] = String(body.readableBytes)
        }
        let finalHead = head
        let eventLoop = channel.eventLoop
        let handler = self.handler
        let stream = HTTP2ClientStream(connection: handler, eventLoop: eventLoop)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPClientResponse, any Error>) in
                eventLoop.execute {
                    stream.headContinuation = continuation
                    if let body { stream.requestBody = body }
                    handler.value.startRequest(stream, head: finalHead)
                }
            }
        } onCancel: {
            eventLoop.execute { handler.value.cancel(stream) }
        }
    }

    /// Whether the connection is open.
    public var isActive: Bool { channel.isActive }

    /// Whether the server has sent HTTP/2 frames on this connection (its SETTINGS come first, before any answer):
    /// proof that it speaks HTTP/2 even when a request then stalls. Over TLS, the connection exists only once ALPN
    /// chose `h2`.
    public var serverSpokeHTTP2: Bool { heardHTTP2.withLockedValue { $0 } }

    /// Whether the connection is over TLS (its ALPN chose `h2`).
    public var isTLS: Bool { scheme == "https" }

    /// Sends GOAWAY and closes the connection; open streams fail with `HTTPTransportError.connectionClosed`.
    public func close() async {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.close() }
        try? await channel.closeFuture.get()
    }
}
