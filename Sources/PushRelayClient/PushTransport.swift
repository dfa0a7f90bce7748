public import HTTPTypes

/// One HTTP request of the client: method, path (with the server URL's prefix), header fields and body.
///
/// The relay's API (paths, JSON bodies, credentials, status codes) is the client's business; a transport only
/// carries requests. Transports add `Host`/`:authority`, `Content-Length` and framing themselves.
public struct TransportRequest: Sendable {
    /// The method, e.g. `POST`.
    public var method: HTTPRequest.Method
    /// The path and query, e.g. `/v1/stream`, including the server URL's path prefix.
    public var path: String
    /// The header fields (credentials, content type, `Last-Event-ID`).
    public var headerFields: HTTPFields
    /// The body, or `nil` for none.
    public var body: [UInt8]?

    /// Creates a request.
    public init(method: HTTPRequest.Method, path: String, headerFields: HTTPFields, body: [UInt8]?) {
        self.method = method
        self.path = path
        self.headerFields = headerFields
        self.body = body
    }
}

/// A complete (non-streaming) response.
public struct TransportResponse: Sendable {
    /// The status code, e.g. `200`.
    public var status: Int
    /// The header fields.
    public var headerFields: HTTPFields
    /// The whole body.
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, headerFields: HTTPFields, body: [UInt8]) {
        self.status = status
        self.headerFields = headerFields
        self.body = body
    }
}

/// The head of a streaming response: its status and header fields, as the server (or a proxy in front of it) sent
/// them.
///
/// The client reads `Retry-After` from a refusal (`429`, `503`) and `Content-Type` from an answer (`200` must be
/// `text/event-stream`) here, before the body.
public struct TransportResponseHead: Sendable {
    /// The status code, e.g. `200`.
    public var status: Int
    /// The header fields: the HTTP/1.1 head's fields, or the HTTP/2 HEADERS frame's regular fields (no
    /// pseudo-header fields).
    public var headerFields: HTTPFields

    /// Creates a response head.
    public init(status: Int, headerFields: HTTPFields) {
        self.status = status
        self.headerFields = headerFields
    }
}

/// Reads the body of a streaming response, chunk by chunk, in order; `nil` at the end of the body.
///
/// A transport throws ``PushClientError/Code-swift.struct/heartbeatTimeout`` from ``next()`` when nothing arrived
/// for the idle timeout it was given.
public struct TransportBodyReader {
    private let nextChunk: () async throws -> [UInt8]?

    /// Creates a reader that calls `nextChunk` for each chunk.
    public init(_ nextChunk: @escaping () async throws -> [UInt8]?) {
        self.nextChunk = nextChunk
    }

    /// The next chunk of the body, or `nil` at its end.
    public func next() async throws -> [UInt8]? {
        try await nextChunk()
    }
}

/// How the client talks HTTP to the relay: the only platform-specific part of the library.
///
/// ``URLSessionTransport`` (the platform's `URLSession`: HTTP/2 on Apple platforms, FoundationNetworking on Linux)
/// is the default. The `PushRelayClientNIO` module adds `HTTP2Transport` (SwiftNIO and libnghttp2, one connection
/// for the stream and the acknowledgements, with an HTTP/1.1 fallback) for Linux servers, test hosts and the CLI.
/// Nothing above this protocol changes with the transport.
public protocol PushTransport: Sendable {
    /// Sends a request and returns the whole response.
    func send(_ request: TransportRequest) async throws -> TransportResponse

    /// Sends a request and hands the response's head (status and header fields, as received) and the body reader to
    /// `body`; the connection (or HTTP/2 stream) is closed when `body` returns or throws, including by
    /// cancellation. Reads that see nothing for `idleTimeout` throw
    /// ``PushClientError/Code-swift.struct/heartbeatTimeout``.
    func withStreamingResponse(
        to request: TransportRequest,
        idleTimeout: Duration,
        _ body: (_ head: TransportResponseHead, _ reader: TransportBodyReader) async throws -> Void
    ) async throws

    /// Releases what the transport holds (pooled connections, the session). Requests after this fail.
    func shutdown() async
}
