public import PushRelayCore
/// The outcome of one ``NewMessage`` in ``PushStore/enqueue(_:)``, in request order.
public enum EnqueueResult: Hashable, Sendable {
    /// Committed to the device's queue with this id (durable: the commit's fsync has returned).
    case stored(MessageID)
    /// Time to live 0: not stored. The id numbers the message for a live delivery to a connected device; if the
    /// device is not connected the message is dropped. No commit notification is sent for it.
    case transient(MessageID)
    /// The device no longer exists (unregistered or its project deleted since the token was resolved):
    /// answer `NotRegistered`.
    case deviceNotFound

    /// The message id when the message was stored or numbered.
    public var messageID: MessageID? {
        switch self {
        case .stored(let id), .transient(let id): id
        case .deviceNotFound: nil
        }
    }
}
