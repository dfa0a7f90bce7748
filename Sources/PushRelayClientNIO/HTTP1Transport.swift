import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import PushRelayClient

/// The HTTP/1.1 transport on SwiftNIO: one TCP connection (TLS when the URL is `https`) per request.
///
/// The fallback of ``HTTP2Transport`` when the server offers no HTTP/2. Its failures are the client's errors, as the
/// other transports': a connection that cannot be made or does not hold is
/// ``PushClientError/Code-swift.struct/connectionClosed`` (retried; a ``FailoverTransport`` moves on), a TLS handler
/// factory that throws ``PushClientError/Code-swift.struct/tlsNotConfigured`` (final).
struct HTTP1Transport: PushTransport {
    /// A complete response larger than this is refused (the relay's answers are small).
    static let maximumResponseSize = 1 << 20

    let host: String
    let port: Int
    let connectTimeout: Duration
    /// How long a non-streaming request may stay silent before it fails.
    let requestTimeout: Duration
    let tlsHandlerFactory: HTTP2Transport.TLSHandlerFactory?
    let group: any EventLoopGroup

    /// Creates the transport for the configuration's server URL.
    ///
    /// - Throws: ``PushClientError`` when the URL is not `http(s)://host[:port]` or is `https` without a TLS factory.
    init(
        configuration: PushClientConfiguration, tlsHandlerFactory: HTTP2Transport.TLSHandlerFactory? = nil,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws {
        let url = configuration.serverURL
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty
        else {
            throw PushClientError(code: .invalidConfiguration, message: "server URL must be http(s)://host[:port]")
        }
        if scheme == "https" && tlsHandlerFactory == nil {
            throw PushClientError(code: .tlsNotConfigured, message: "an https server URL needs a TLS handler factory")
        }
        // URL.host keeps the brackets of an IPv6 literal on some platforms.
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.port = url.port ?? (scheme == "https" ? 443 : 80)
        self.connectTimeout = configuration.connectTimeout
        self.requestTimeout = max(configuration.connectTimeout, .seconds(30))
        self.tlsHandlerFactory = scheme == "https" ? tlsHandlerFactory : nil
        self.group = group
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let channel = try await connect(idleTimeout: requestTimeout)
        do {
            return try await exchange(request, on: channel)
        } catch {
            throw Self.clientError(error, "request")
        }
    }

    private func exchange(_ request: TransportRequest, on channel: Connection) async throws -> TransportResponse {
        try await channel.executeThenClose { inbound, outbound in
            try await write(request, keepAlive: false, to: outbound)
            var status: Int?
            var fields = HTTPFields()
            var body: [UInt8] = []
            for try await part in inbound {
                switch part {
                case .head(let head):
                    status = Int(head.status.code)
                    fields = Self.fields(head.headers)
                case .body(let buffer):
                    guard body.count + buffer.readableBytes <= Self.maximumResponseSize else {
                        throw PushClientError(code: .invalidResponse, message: "response body too large")
                    }
                    body.append(contentsOf: buffer.readableBytesView)
                case .end:
                    guard let status else { break }
                    return TransportResponse(status: status, headerFields: fields, body: body)
                }
            }
            throw PushClientError(code: .connectionClosed, message: "connection closed before the response ended")
        }
    }

    func withStreamingResponse(
        to request: TransportRequest,
        idleTimeout: Duration,
        _ body: (_ head: TransportResponseHead, _ reader: TransportBodyReader) async throws -> Void
    ) async throws {
        let channel = try await connect(idleTimeout: idleTimeout)
        try await channel.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            var responseHead: TransportResponseHead?
            do {
                try await write(request, keepAlive: true, to: outbound)
                while responseHead == nil {
                    guard let part = try await iterator.next() else {
                        throw PushClientError(code: .connectionClosed,
                                              message: "connection closed before the response")
                    }
                    if case .head(let head) = part {
                        responseHead = TransportResponseHead(status: Int(head.status.code),
                                                             headerFields: Self.fields(head.headers))
                    }
                }
            } catch {
                throw Self.clientError(error, "request")
            }
            var ended = false
            let reader = TransportBodyReader {
                while !ended {
                    let next: HTTPClientResponsePart?
                    do {
                        next = try await iterator.next()
                    } catch {
                        throw Self.clientError(error, "stream")
                    }
                    guard let part = next else {
                        throw PushClientError(code: .connectionClosed, message: "stream closed without an end")
                    }
                    switch part {
                    case .head: continue
                    case .body(let buffer): return Array(buffer.readableBytesView)
                    case .end: ended = true
                    }
                }
                return nil
            }
            // The body's own errors are the caller's: passed on as they are.
            try await body(responseHead!, reader)
        }
    }

    /// A socket's or SwiftNIO's error as the client's: `connectionClosed`, the connection did not hold, which
    /// ``PushClient`` retries and ``FailoverTransport`` moves on from, as it does for the other transports. A
    /// ``PushClientError`` (the idle timeout's `heartbeatTimeout`; the TLS handler factory's `tlsNotConfigured`,
    /// which SwiftNIO hands on inside its `NIOConnectionError`) and a cancellation pass as they are.
    static func clientError(_ error: any Error, _ what: String) -> any Error {
        if error is PushClientError || error is CancellationError { return error }
        if let failure = error as? NIOConnectionError,
           let own = failure.connectionErrors.lazy.compactMap({ $0.error as? PushClientError }).first
        {
            return own
        }
        return PushClientError(code: .connectionClosed, message: "HTTP/1.1 \(what): \(error)")
    }

    func shutdown() async {}

    private typealias Connection = NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>

    private func connect(idleTimeout: Duration) async throws -> Connection {
        let host = self.host
        let tlsHandlerFactory = self.tlsHandlerFactory
        let headTimeout = TimeAmount.nanoseconds(Self.nanoseconds(requestTimeout))
        let idleTimeout = TimeAmount.nanoseconds(Self.nanoseconds(idleTimeout))
        do {
            return try await bootstrap(tlsHandlerFactory: tlsHandlerFactory, host: host, headTimeout: headTimeout,
                                       idleTimeout: idleTimeout)
        } catch {
            throw Self.clientError(error, "connect")
        }
    }

    private func bootstrap(
        tlsHandlerFactory: HTTP2Transport.TLSHandlerFactory?, host: String, headTimeout: TimeAmount,
        idleTimeout: TimeAmount
    ) async throws -> Connection {
        try await ClientBootstrap(group: group)
            .connectTimeout(.nanoseconds(Self.nanoseconds(connectTimeout)))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tlsHandlerFactory {
                        let handler: any ChannelHandler
                        do {
                            handler = try tlsHandlerFactory(host)
                        } catch {
                            // As HTTP2Transport says it: a factory that cannot make a handler fails every request.
                            throw PushClientError(code: .tlsNotConfigured, message: "TLS handler: \(error)")
                        }
                        try pipeline.addHandler(handler)
                    }
                    try pipeline.addHTTPClientHandlers()
                    try pipeline.addHandler(IdleReadTimeoutHandler(headTimeout: headTimeout, idleTimeout: idleTimeout))
                    return try Connection(wrappingChannelSynchronously: channel)
                }
            }
    }

    private func write(
        _ request: TransportRequest, keepAlive: Bool, to outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>
    ) async throws {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: port == 80 || port == 443 ? host : "\(host):\(port)")
        for field in request.headerFields {
            headers.add(name: field.name.rawName, value: field.value)
        }
        if let body = request.body {
            headers.add(name: "Content-Length", value: String(body.count))
        }
        if !keepAlive {
            headers.add(name: "Connection", value: "close")
        }
        let head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method.rawValue),
                                   uri: request.path, headers: headers)
        try await outbound.write(.head(head))
        if let body = request.body, !body.isEmpty {
            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body))))
        }
        try await outbound.write(.end(nil))
    }

    private static func fields(_ headers: HTTPHeaders) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in headers {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        return fields
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
