public import NIOCore

extension HTTPServer {
    /// What happened to a connection, for ``Configuration/connectionEvents``.
    public enum ConnectionEvent: Sendable, Hashable {
        /// A connection was accepted and is served.
        case opened
        /// A served connection closed.
        case closed
        /// A connection was closed at accept: ``Configuration/maxConnections`` was reached.
        case refusedOverLimit
        /// A connection was closed at accept: ``Configuration/maxConnectionsPerAddress`` was reached for its
        /// address.
        case refusedOverAddressLimit
    }

    /// Limits and timeouts of an `HTTPServer`. Every field has a production default.
    public struct Configuration: Sendable {
        /// Most concurrent HTTP/2 streams a client may open on one connection (SETTINGS_MAX_CONCURRENT_STREAMS).
        /// Default 256.
        public var maxConcurrentStreams: Int = 256
        /// The HTTP/2 receive window per stream (SETTINGS_INITIAL_WINDOW_SIZE), in bytes. Default 65,535.
        public var initialWindowSize: Int = 65_535
        /// Largest request header block, in bytes (HTTP/2 SETTINGS_MAX_HEADER_LIST_SIZE; HTTP/1.1 head size).
        /// A larger head is answered with `431`. Default 16 KiB.
        public var maxHeaderListSize: Int = 16 * 1024
        /// A connection with no request in flight for this long is closed, whatever it sends meanwhile: an
        /// HTTP/1.1 connection whose next request head is not complete this long after the previous response (or
        /// after it connected), an HTTP/2 connection with no open stream this long, PINGs or not (GOAWAY first).
        /// `nil` disables the timeout. Default 120 s.
        public var idleTimeout: TimeAmount? = .seconds(120)
        /// A request must have arrived whole this long after its head began: on HTTP/1.1 the body, after the head
        /// (else `408` and the connection closes); on HTTP/2 the stream's header block and body, after its first
        /// HEADERS frame (else RST_STREAM `CANCEL`). A slow sender of headers or body is cut off here, not held
        /// open by its trickle. `nil` disables it. Default 30 s.
        public var requestTimeout: TimeAmount? = .seconds(30)
        /// Most connections open at once over all listeners; a connection accepted beyond it is closed at once.
        /// `nil`: no limit. Default `nil` (the daemon derives one from its open-file limit).
        public var maxConnections: Int?
        /// Most connections open at once from one IP address; beyond it a new one is closed at accept. `nil`: no
        /// limit. Default `nil`.
        public var maxConnectionsPerAddress: Int?
        /// HTTP/2 frames that ask for no work (PING, SETTINGS, WINDOW_UPDATE, PRIORITY, an empty DATA frame
        /// without END_STREAM) a connection may send in a burst; beyond it and the rate below the connection is
        /// closed with GOAWAY `ENHANCE_YOUR_CALM`. Each request a client opens adds two to its allowance.
        /// Default 10,000.
        public var controlFrameBurst: Int = 10_000
        /// Frames that ask for no work allowed per second after the burst. Default 1,000.
        public var controlFrameRatePerSecond: Int = 1000
        /// How long `shutdown()` lets open requests and streams finish before it closes their connections.
        /// Default 10 s.
        public var drainTimeout: TimeAmount = .seconds(10)
        /// Stream resets a client may send in a burst before nghttp2 answers GOAWAY (rapid reset,
        /// CVE-2023-44487). Default 1000.
        public var streamResetBurst: Int = 1000
        /// Stream resets per second a client may send after the burst. Default 33.
        public var streamResetRatePerSecond: Int = 33
        /// Most CONTINUATION frames after one HEADERS frame (CVE-2024-28182). Default 8.
        public var maxContinuations: Int = 8
        /// Most entries in one SETTINGS frame. Default 32.
        public var maxSettings: Int = 32
        /// Most queued SETTINGS/PING acknowledgements before the connection is closed as a flood. Default 1000.
        public var maxOutboundAck: Int = 1000
        /// Bytes a streaming response may queue inside the server before `write` suspends; the bound on the
        /// server's buffering for one slow reader, on top of the socket buffer. Default 64 KiB.
        public var streamWriteHighWatermark: Int = 64 * 1024
        /// Request-body bytes one HTTP/2 connection may hold before the server stops reopening its flow-control
        /// windows: the server reopens a stream's window as it takes the body in, and only while the connection's
        /// requests hold less than this (a request that is its connection's only holder always gets its window
        /// back, so one body larger than this, up to its route's limit, still arrives). Bytes are given back when the request is answered or its stream
        /// closes. With the 65,535-byte connection window, a connection buffers at most this plus that window.
        /// Default 1 MiB.
        public var maxBufferedBodyBytesPerConnection: Int = 1024 * 1024
        /// Request-body bytes all HTTP/2 connections together may hold (the same accounting as above, over the
        /// whole server); past it every connection's windows stay closed, so peers stop sending, until requests
        /// finish (or their `requestTimeout` ends them). A request that is the server's only holder still gets its
        /// whole body. `nil`: no bound. HTTP/1.1 reads one request at a time per connection and is not counted.
        /// Default 64 MiB.
        public var maxBufferedBodyBytes: Int? = 64 * 1024 * 1024
        /// The listen backlog of every listener. Default 256.
        public var backlog: Int = 256
        /// Told of every connection accepted, closed, or refused at accept (for metrics). Called on the
        /// connection's event loop: it must return quickly. Default `nil`.
        public var connectionEvents: (@Sendable (ConnectionEvent) -> Void)?

        /// The defaults.
        public init() {}

        var sessionLimits: NGHTTP2SessionLimits {
            NGHTTP2SessionLimits(
                maxConcurrentStreams: maxConcurrentStreams,
                initialWindowSize: initialWindowSize,
                maxHeaderListSize: maxHeaderListSize,
                streamResetBurst: streamResetBurst,
                streamResetRatePerSecond: streamResetRatePerSecond,
                maxContinuations: maxContinuations,
                maxSettings: maxSettings,
                maxOutboundAck: maxOutboundAck
            )
        }
    }

    /// One address to accept connections on.
    public struct Listener: Sendable {
        /// The host or IP address to bind, e.g. `127.0.0.1` or `::`.
        public var host: String
        /// The port; `0` picks a free one (see the addresses `start()` returns).
        public var port: Int
        /// Makes the first handler of each accepted connection's pipeline (TLS). The HTTP layer after it still
        /// chooses HTTP/2 or HTTP/1.1 by the first plaintext bytes. `nil`: cleartext.
        public var tlsHandlerFactory: (@Sendable () -> any ChannelHandler)?

        /// A listener on `host:port`, cleartext unless a TLS handler factory is given.
        public init(host: String, port: Int, tlsHandlerFactory: (@Sendable () -> any ChannelHandler)? = nil) {
            self.host = host
            self.port = port
            self.tlsHandlerFactory = tlsHandlerFactory
        }
    }
}
