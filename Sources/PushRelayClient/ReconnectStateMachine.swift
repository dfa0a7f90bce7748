/// The client's connection life cycle as a value type: when to connect, how long to wait, when to give up, and
/// which event id to resume from.
///
/// The driver (``PushClient``) reports events; each mutating method returns what to do. No clock and no sleeping
/// happen here: durations come in as arguments and random numbers from the generator the caller passes, so tests
/// drive it with a fixed generator.
///
/// Resumption: ``resumeEventID`` is the id of the last message handled successfully with no unhandled message
/// before it on the current connection. It is sent as `Last-Event-ID`, which the relay takes as an acknowledgement
/// of everything up to it; so once a handler fails, the id stops advancing until the next connection, and the
/// failed message is delivered again.
struct ReconnectStateMachine: Sendable {
    /// What the driver does next.
    enum Action: Sendable, Hashable {
        /// Open the stream now.
        case connect
        /// Wait `delay`, then open the stream; this is consecutive attempt `attempt` (from 1).
        case reconnect(after: Duration, attempt: Int)
        /// Stop: the failure cannot be cured by retrying, or (`exhausted`) the attempts are spent.
        case fail(reason: String, exhausted: Bool)
    }

    /// Why a connection ended or could not be made.
    enum Failure: Sendable, Hashable {
        /// Network error, server error, or the stream ended: retry.
        case transient(String)
        /// No data (not even a heartbeat) within the heartbeat timeout: the connection is declared dead.
        case heartbeatTimeout
        /// The server refused the credentials or the request, or the request cannot be made as configured:
        /// retrying cannot help.
        case permanent(String)

        /// Whether this is a ``permanent(_:)`` failure.
        var isPermanent: Bool {
            if case .permanent = self { true } else { false }
        }
    }

    private enum State: Sendable, Hashable {
        case idle
        case connecting
        case connected(failedMessageOnThisConnection: Bool)
        case waiting
        case failed
    }

    let policy: BackoffPolicy
    private var state: State = .idle
    /// Consecutive failed attempts since the last stable connection.
    private(set) var attempt = 0
    private var previousDelay: Duration?
    /// The id to send as `Last-Event-ID` on the next connection.
    private(set) var resumeEventID: String?

    /// Creates the machine; `resumeEventID` is where a previous run stopped, if known.
    init(policy: BackoffPolicy, resumeEventID: String? = nil) {
        self.policy = policy
        self.resumeEventID = resumeEventID
    }

    /// The client starts: connect at once.
    mutating func start() -> Action {
        state = .connecting
        return .connect
    }

    /// The wait is over and the driver is opening the stream.
    mutating func reconnecting() {
        state = .connecting
    }

    /// The server accepted the stream (status 200).
    mutating func connected() {
        state = .connected(failedMessageOnThisConnection: false)
    }

    /// The app handled message `id` (handler returned, observers notified).
    mutating func messageHandled(id: String) {
        guard case .connected(let failed) = state, !failed else { return }
        resumeEventID = id
    }

    /// The app's handler threw for message `id`: stop advancing the resume id on this connection.
    mutating func messageFailed(id: String) {
        guard case .connected = state else { return }
        state = .connected(failedMessageOnThisConnection: true)
    }

    /// The connection ended or could not be made. `connectedFor` is how long it was up (`nil` if it never was);
    /// `serverDelay` is the wait the server asked for (`Retry-After` on a `429` or `503`), if it did.
    ///
    /// The delay is the backoff's, or the server's when that is longer, the server's cut to
    /// ``BackoffPolicy/maximumRetryAfter``. A server's wait counts as an attempt and does not feed the backoff:
    /// the next delay grows from the backoff's own previous one.
    mutating func connectionLost(
        _ failure: Failure, connectedFor: Duration?, serverDelay: Duration? = nil,
        using random: inout some RandomNumberGenerator
    ) -> Action {
        if case .permanent(let reason) = failure {
            state = .failed
            return .fail(reason: reason, exhausted: false)
        }
        if let connectedFor, connectedFor >= policy.stableAfter {
            attempt = 0
            previousDelay = nil
        }
        attempt += 1
        if let maximum = policy.maximumAttempts, attempt > maximum {
            state = .failed
            let why = switch failure {
            case .transient(let reason): reason
            case .heartbeatTimeout: "heartbeat timeout"
            case .permanent(let reason): reason
            }
            return .fail(reason: "gave up after \(maximum) attempts: \(why)", exhausted: true)
        }
        state = .waiting
        let backoff = nextDelay(using: &random)
        previousDelay = backoff
        guard let serverDelay else { return .reconnect(after: backoff, attempt: attempt) }
        let bounded = min(max(serverDelay, .zero), max(policy.maximumRetryAfter, .zero))
        return .reconnect(after: max(backoff, bounded), attempt: attempt)
    }

    /// The delay for the current ``attempt``.
    private func nextDelay(using random: inout some RandomNumberGenerator) -> Duration {
        let base = policy.base.inSeconds
        let maximum = max(base, policy.maximum.inSeconds)
        let multiplier = max(1, policy.multiplier)
        let bound = min(maximum, base * pow(multiplier, Double(attempt - 1)))
        let seconds: Double
        switch policy.jitter.kind {
        case .none:
            seconds = bound
        case .full:
            seconds = bound * Self.unit(&random)
        case .decorrelated:
            let upper = min(maximum, max(base, previousDelay?.inSeconds ?? base) * multiplier)
            seconds = base + (max(upper, base) - base) * Self.unit(&random)
        }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }

    /// A uniform draw in `0 ..< 1` from the top 53 bits of one generator output (no rejection loop, so that any
    /// generator, even a constant one, terminates).
    private static func unit(_ random: inout some RandomNumberGenerator) -> Double {
        Double(random.next() >> 11) * 0x1p-53
    }

    /// `x` to the power `n` for small non-negative `n`, without Foundation.
    private func pow(_ x: Double, _ n: Double) -> Double {
        var result = 1.0
        var remaining = Int(n)
        while remaining > 0, result < 1e12 {
            result *= x
            remaining -= 1
        }
        return result
    }
}
