/// How the client waits between reconnection attempts: exponential backoff with jitter, bounded.
///
/// The delay before attempt *n* (counting from 1) grows as `base × multiplierⁿ⁻¹`, capped at ``maximum``; the
/// ``jitter`` spreads it so that many clients dropped at once do not come back at once. After a connection that
/// stayed up for ``stableAfter`` the count starts again at 1.
///
/// A stream refused with `429` or `503` and a `Retry-After` (from the relay, or a proxy or load balancer in front
/// of it) waits at least what the server asked, and never less than the backoff delay; a server's wait longer than
/// ``maximumRetryAfter`` (default one hour) is cut to it, so that a broken or hostile server cannot park the client
/// for ever. The refusal counts as an attempt like any other failure.
///
/// The same policy paces the registration ``PushClient/run(onMessage:)`` makes for a client without credentials
/// (each try of it an attempt, counted apart from the stream's), and the answers that are not an event stream (a
/// captive portal's page): they are failures that may pass, retried until ``maximumAttempts``, if one is set.
public struct BackoffPolicy: Sendable, Hashable {
    /// How a delay is drawn from the exponential bound.
    public struct Jitter: Sendable, Hashable, CustomStringConvertible {
        enum Kind: Sendable, Hashable { case none, full, decorrelated }
        let kind: Kind

        /// No jitter: exactly `min(maximum, base × multiplierⁿ⁻¹)`.
        public static let none = Jitter(kind: .none)
        /// "Full jitter": uniformly random in `0 ... min(maximum, base × multiplierⁿ⁻¹)`.
        public static let full = Jitter(kind: .full)
        /// "Decorrelated jitter": uniformly random in `base ... previous delay × multiplier`, capped at `maximum`.
        public static let decorrelated = Jitter(kind: .decorrelated)

        /// `none`, `full` or `decorrelated`.
        public var description: String { "\(kind)" }
    }

    /// The first delay (and the smallest with decorrelated jitter). Default 0.5 s.
    public var base: Duration
    /// The largest delay. Default 30 s.
    public var maximum: Duration
    /// The growth factor per attempt, at least 1. Default 2.
    public var multiplier: Double
    /// How delays are randomised. Default ``Jitter/full``.
    public var jitter: Jitter
    /// A connection that stayed up at least this long resets the attempt count. Default 30 s.
    public var stableAfter: Duration
    /// Give up after this many consecutive failed attempts (lost or refused streams, answers that are not an event
    /// stream, ``PushClient/run(onMessage:)``'s registrations), with ``PushClientError/Code-swift.struct/gaveUp``;
    /// `nil` (the default) retries for ever.
    public var maximumAttempts: Int?
    /// The longest wait a server's `Retry-After` can impose before the next attempt (a stream refused with `429` or
    /// `503`); a longer one is cut to this. The backoff delay applies when it is longer. Default one hour; `.zero`
    /// ignores `Retry-After`.
    public var maximumRetryAfter: Duration

    /// Creates a policy; every parameter has a default.
    public init(
        base: Duration = .milliseconds(500),
        maximum: Duration = .seconds(30),
        multiplier: Double = 2,
        jitter: Jitter = .full,
        stableAfter: Duration = .seconds(30),
        maximumAttempts: Int? = nil,
        maximumRetryAfter: Duration = .seconds(3600)
    ) {
        self.base = base
        self.maximum = maximum
        self.multiplier = multiplier
        self.jitter = jitter
        self.stableAfter = stableAfter
        self.maximumAttempts = maximumAttempts
        self.maximumRetryAfter = maximumRetryAfter
    }
}
