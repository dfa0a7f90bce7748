/// An error of the push client: a code to switch on and a sentence for people. Nothing secret is in the message.
public struct PushClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of error. New codes may be added; switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidConfiguration, unauthorized, notRegistered, notFound, httpStatus, invalidResponse
            case connectionClosed, heartbeatTimeout, invalidFile, tlsNotConfigured, gaveUp, bufferLimitExceeded
        }

        private let base: Base

        private init(_ base: Base) { self.base = base }

        /// The configuration cannot work (bad URL, no credentials, contradictory options), including a server URL
        /// the transport refuses only when it makes the request (``URLSessionTransport``: a port out of range).
        /// ``PushClient/run(onMessage:)`` does not retry it, for the registration or the stream.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The server refused the client key or the device secret (401/403).
        public static let unauthorized = Code(.unauthorized)
        /// The device is not registered (410).
        public static let notRegistered = Code(.notRegistered)
        /// The server has no such route (404): the server URL (or its path prefix) is not a relay's. The relay
        /// answers a removed device `401`, never `404`.
        public static let notFound = Code(.notFound)
        /// The server answered with an unexpected status.
        public static let httpStatus = Code(.httpStatus)
        /// The server's answer could not be read, or is not what a relay answers: a stream that is not an event
        /// stream, a registration without a token. A captive portal (a Wi-Fi sign-in page) or a misconfigured proxy
        /// answers so; ``PushClient/run(onMessage:)`` takes it as temporary and tries again with its backoff, and
        /// ``PushClient/lastError`` carries this code meanwhile.
        public static let invalidResponse = Code(.invalidResponse)
        /// The connection closed before the answer was complete.
        public static let connectionClosed = Code(.connectionClosed)
        /// The stream was silent (not even a heartbeat) for longer than the heartbeat timeout.
        public static let heartbeatTimeout = Code(.heartbeatTimeout)
        /// A streaming answer arrived faster than it was read, past what the transport holds for its reader
        /// (``URLSessionTransport`` on FoundationNetworking, which cannot slow the server down): the transport closed
        /// the stream rather than hold more or drop any of it. ``PushClient/run(onMessage:)`` reconnects as after a
        /// lost connection; what was not acknowledged arrives again.
        public static let bufferLimitExceeded = Code(.bufferLimitExceeded)
        /// A credentials or deduplication file exists but cannot be read.
        public static let invalidFile = Code(.invalidFile)
        /// The URL is `https` but the configuration has no TLS handler factory, or the factory threw when a
        /// connection needed a handler. ``PushClient/run(onMessage:)`` does not retry it, for the registration or
        /// the stream.
        public static let tlsNotConfigured = Code(.tlsNotConfigured)
        /// Reconnection gave up (``BackoffPolicy/maximumAttempts`` reached).
        public static let gaveUp = Code(.gaveUp)

        /// The code's name, e.g. `unauthorized`.
        public var description: String { base.rawValue }
    }

    /// The kind of error.
    public let code: Code
    /// What happened, for people.
    public let message: String
    /// The HTTP status the server answered, when there was one.
    public let status: Int?
    /// How long the server asked the client to wait before trying again: the `Retry-After` of a `429` or `503`
    /// answer (seconds, or an HTTP-date counted from when the answer arrived; a date in the past is zero), as sent
    /// and not bounded. `nil` when the answer had none, or another status.
    ///
    /// ``PushClient/run(onMessage:)`` waits at least this long (up to ``BackoffPolicy/maximumRetryAfter``)
    /// before opening a refused stream again, or before trying again a registration it makes itself (a client
    /// without credentials). ``PushClient/register()`` makes one attempt and does not wait: an app that tries again
    /// reads the wait here. Through a ``FailoverTransport`` that found every relay refusing, this is the shortest
    /// wait any of them asked for.
    public let retryAfter: Duration?

    /// Creates an error.
    public init(code: Code, message: String, status: Int? = nil, retryAfter: Duration? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.retryAfter = retryAfter
    }

    /// `<code>: <message>`.
    public var description: String { "\(code): \(message)" }
}
