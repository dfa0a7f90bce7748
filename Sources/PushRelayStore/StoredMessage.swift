public import PushRelayCore
public import Foundation

/// A pending message of a device, as ``PushStore/pendingMessages(for:after:limit:)`` returns it.
public struct StoredMessage: Hashable, Sendable {
    /// What the stored row is.
    public enum Kind: Hashable, Sendable {
        /// A message sent by a back end; ``StoredMessage/body`` is what the relay enqueued.
        case message
        /// The `deleted_messages` marker the queue policy left after dropping messages (FCM's "more than 100 pending
        /// non-collapsible messages"). Its body is empty: the relay renders the event
        /// (`"message_type": "deleted_messages"`).
        case deletedMessages
    }

    /// The message id (queue order).
    public var id: MessageID
    /// The device it is queued for.
    public var device: DeviceID
    /// A message or the `deleted_messages` marker.
    public var kind: Kind
    /// The body given at enqueue (empty for the marker).
    public var body: [UInt8]
    /// The collapse key, if any.
    public var collapseKey: String?
    /// When it stops being delivered.
    public var expiresAt: Date

    /// Creates a value.
    public init(id: MessageID, device: DeviceID, kind: Kind, body: [UInt8], collapseKey: String?, expiresAt: Date) {
        self.id = id
        self.device = device
        self.kind = kind
        self.body = body
        self.collapseKey = collapseKey
        self.expiresAt = expiresAt
    }

    /// A value with the expiry in microseconds since 1970, as the store keeps it.
    init(id: MessageID, device: DeviceID, kind: Kind, body: [UInt8], collapseKey: String?, expiresAtMicros: Int64) {
        self.init(
            id: id, device: device, kind: kind, body: body, collapseKey: collapseKey,
            expiresAt: StoreContext.date(micros: expiresAtMicros)
        )
    }
}
