/// What the client is doing, as the course's view models express it: one enum, pushed to observers.
///
/// Every observer (``SalesMessageViewModel``, its delegate, ``PushClient/states()``) sees the same states in the
/// same order, on the main actor.
public enum PushClientState: Sendable, Hashable {
    /// Not started, or stopped.
    case idle
    /// Registering with the relay (`POST /v1/register`).
    case registering
    /// Registered: hand `token` to the back end.
    case registered(token: String)
    /// Opening the stream.
    case connecting
    /// The stream is open; `token` is the device's registration token when known.
    case connected(token: String?)
    /// A message carrying a ``SalesNotification`` (`gcm.notification.orderInfo`) arrived.
    case received(SalesNotification, messageID: String)
    /// A message arrived that carries no ``SalesNotification``, or a malformed one
    /// (``PushMessage/salesNotification()`` says which field).
    case receivedMessage(PushMessage)
    /// The stream was lost or could not be opened (or ``PushClient/run(onMessage:)``'s registration failed for now);
    /// attempt `attempt` starts after `after`. ``PushClient/lastError`` says why.
    case reconnecting(attempt: Int, after: Duration)
    /// The client stopped on an error that retrying cannot cure (refused credentials, a configuration the request
    /// cannot be made with, attempts exhausted), or ``PushClient/register()`` failed. ``PushClient/lastError`` says
    /// why.
    case failed(message: String)
}

extension PushClientState: CustomStringConvertible {
    /// A short line for logs and the `listen` command, e.g. `connected`, `reconnecting (attempt 2 in 0.8 s)`.
    public var description: String {
        switch self {
        case .idle: "idle"
        case .registering: "registering"
        case .registered(let token): "registered (token \(token))"
        case .connecting: "connecting"
        case .connected: "connected"
        case .received(_, let messageID): "received \(messageID)"
        case .receivedMessage(let message): "received \(message.id)"
        case .reconnecting(let attempt, let delay):
            "reconnecting (attempt \(attempt) in \(Self.milliseconds(delay)) ms)"
        case .failed(let message): "failed: \(message)"
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
