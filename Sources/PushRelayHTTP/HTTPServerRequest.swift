public import HTTPTypes
public import NIOCore

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

    public init(
        head: HTTPRequest,
        body: HTTPRequestBody,
        pathParameters: [String: String] = [:],
        remoteAddress: SocketAddress? = nil,
        protocolVersion: HTTPProtocolVersion
    ) {
        self.head = head
        self.body = body
        self.pathParameters = pathParameters
        self.remoteAddress = remoteAddress
        self.protocolVersion = protocolVersion
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
            if parts.first.map(String.init)?.removingPercentEncodingForForm() == name {
                return parts.count > 1 ? String(parts[1]).removingPercentEncodingForForm() : ""
            }
        }
        return nil
    }
}

extension String {
    /// Decodes `application/x-www-form-urlencoded` text: `+` is a space, `%XX` a byte.
    public func removingPercentEncodingForForm() -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(Self.hexValue), let low = iterator.next().flatMap(Self.hexValue)
                else { return nil }
                bytes.append(high << 4 | low)
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
