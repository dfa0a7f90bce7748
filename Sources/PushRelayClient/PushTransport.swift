import HTTPTypes

/// One HTTP request of the client: method, path (with the server URL's prefix), header fields and body.
///
/// The relay's API (paths, JSON bodies, credentials, status codes) is ``RelayAPI``'s business; a transport only
/// carries requests. Transports add `Host`/`:authority`, `Content-Length` and framing themselves.
struct TransportRequest: Sendable {
    var method: HTTPRequest.Method
    var path: String
    var headerFields: HTTPFields
    var body: [UInt8]?
}

/// A complete (non-streaming) response.
struct TransportResponse: Sendable {
    var status: Int
    var headerFields: HTTPFields
    var body: [UInt8]
}

/// Reads the body of a streaming response, chunk by chunk, in order; `nil` at the end of the body.
///
/// A transport throws ``PushClientError/Code-swift.struct/heartbeatTimeout`` from ``next()`` when nothing arrived
/// for the idle timeout it was given.
struct TransportBodyReader {
    private let nextChunk: () async throws -> [UInt8]?

    init(_ nextChunk: @escaping () async throws -> [UInt8]?) {
        self.nextChunk = nextChunk
    }

    func next() async throws -> [UInt8]? {
        try await nextChunk()
    }
}

/// How the client talks HTTP to the relay. The only platform-specific part of the library.
///
/// ``HTTP2Transport`` (one connection, the stream and the acknowledgements as streams on it, falling back to
/// ``HTTP1Transport`` when the server offers no `h2`) is the Linux implementation. An Apple-platform transport
/// (URLSession) is one more conforming type; nothing above this protocol changes.
protocol PushTransport: Sendable {
    /// Sends a request and returns the whole response.
    func send(_ request: TransportRequest) async throws -> TransportResponse

    /// Sends a request and hands the status and the body reader to `body`; the connection (or HTTP/2 stream) is
    /// closed when `body` returns or throws, including by cancellation. Reads that see nothing for `idleTimeout`
    /// throw ``PushClientError/Code-swift.struct/heartbeatTimeout``.
    func withStreamingResponse(
        to request: TransportRequest,
        idleTimeout: Duration,
        _ body: (_ status: Int, _ reader: TransportBodyReader) async throws -> Void
    ) async throws

    /// Releases what the transport holds (pooled connections). Requests after this fail.
    func shutdown() async
}
