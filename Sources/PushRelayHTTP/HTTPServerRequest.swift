public import HTTPTypes
public import NIOCore
import PushRelayWire

/// The protocol that carried a request.
public enum HTTPProtocolVersion: Sendable, Hashable {
    case http1_1
    case http2
}

/// A request as handlers see it, whichever protocol carried it.
public struct HTTPServerRequest: Sendable {
    /// Method, scheme, authority, path and header fields.
    public var head: HTTPRequest
    /// The request body, streamed in; already limited to the route's `maxBodyBytes`.
    public var body: HTTPRequestBody
    /// Values captured by the route pattern (`/iid/v1/{token}` → `["token": "…"]`).
    public var pathParameters: [String: String]
    /// The peer's address, when known.
    public var remoteAddress: SocketAddress?
    /// HTTP/1.1 or HTTP/2.
    public var protocolVersion: HTTPProtocolVersion
    /// What the route's gate handed over with ``HTTPGateDecision/admit(_:)``; nil when it had nothing to hand over
    /// or the route has no gate.
    public var admission: (any AnyObject & Sendable)?

    public init(
        head: HTTPRequest,
        body: HTTPRequestBody,
        pathParameters: [String: String] = [:],
        remoteAddress: SocketAddress? = nil,
        protocolVersion: HTTPProtocolVersion,
        admission: (any AnyObject & Sendable)? = nil
    ) {
        self.head = head
        self.body = body
        self.pathParameters = pathParameters
        self.remoteAddress = remoteAddress
        self.protocolVersion = protocolVersion
        self.admission = admission
    }

    /// The path without its query string.
    public var pathWithoutQuery: Substring {
        let path = head.path ?? "/"
        return path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? Substring(path)
    }

    /// The value of a query parameter, percent-decoded, or `nil`.
    public func queryParameter(_ name: String) -> String? {
        guard let path = head.path, let q = path.firstIndex(of: "?") else { return nil }
        for pair in path[path.index(after: q)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if let first = parts.first, PercentDecoding.decode(first, plus: .space) == name {
                return parts.count > 1 ? PercentDecoding.decode(parts[1], plus: .space) : ""
            }
        }
        return nil
    }
}
