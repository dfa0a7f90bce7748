import PushRelayCore

/// Messages a commit removed from device queues before they were delivered, by why: the store reports them to its
/// drop observer (``PushStore/setDropObserver(_:)``) after each commit that dropped any, for the relay's
/// `pushrelay_messages_dropped_total`. Expired messages are not drops (the purge reports those).
public struct DroppedMessages: Hashable, Sendable {
    /// Unexpired collapsible messages replaced by a newer one with the same collapse key, or evicted as the oldest
    /// when a key past the per-device limit arrived.
    public var collapsed: Int
    /// Unexpired non-collapsible messages cleared by the 100-message rule (a `deleted_messages` marker replaces them).
    public var overflow: Int
    /// Pending messages deleted with their device when it unregistered.
    public var unregistered: Int

    /// Creates a tally; all zero by default.
    public init(collapsed: Int = 0, overflow: Int = 0, unregistered: Int = 0) {
        self.collapsed = collapsed
        self.overflow = overflow
        self.unregistered = unregistered
    }

    /// Whether nothing was dropped.
    public var isEmpty: Bool { self.collapsed == 0 && self.overflow == 0 && self.unregistered == 0 }

    /// Adds another tally.
    mutating func add(_ other: DroppedMessages) {
        self.collapsed += other.collapsed
        self.overflow += other.overflow
        self.unregistered += other.unregistered
    }

    /// Counts what one queue-policy action drops.
    mutating func count(_ action: QueuePolicy.Action) {
        switch action {
        case .collapse(let ids): self.collapsed += ids.count
        case .removeAllNonCollapsible(let count): self.overflow += count
        case .remove, .storeDeletedMessagesMarker, .store, .deliverNowOrDrop: break
        }
    }
}
