public import HTTPTypes

/// An error that a handler throws to answer with a status and a plain-text reason.
///
/// The transport turns it into a response; any other error thrown by a handler becomes `500`.
public struct HTTPError: Error, Sendable, Hashable, CustomStringConvertible {
    public var status: HTTPResponse.Status
    public var message: String
    public var headerFields: HTTPFields

    public init(_ status: HTTPResponse.Status, _ message: String = "", headerFields: HTTPFields = [:]) {
        self.status = status
        self.message = message
        self.headerFields = headerFields
    }

    public static let payloadTooLarge = HTTPError(.contentTooLarge, "request body too large")
    public static let notFound = HTTPError(.notFound, "not found")
    public static let methodNotAllowed = HTTPError(.methodNotAllowed, "method not allowed")

    public var description: String { "\(status.code) \(message)" }
}

/// Errors of the transport itself.
public struct HTTPTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case streamClosed
        case connectionClosed
        case protocolError
        case timeout
    }

    private let code: Code
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The peer reset the stream or the connection went away.
    public static func streamClosed(_ message: String = "stream closed") -> Self { .init(.streamClosed, message) }
    /// The connection closed.
    public static func connectionClosed(_ message: String = "connection closed") -> Self {
        .init(.connectionClosed, message)
    }
    /// The peer broke the protocol.
    public static func protocolError(_ message: String) -> Self { .init(.protocolError, message) }
    /// Something took too long.
    public static func timeout(_ message: String) -> Self { .init(.timeout, message) }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { message }
}
