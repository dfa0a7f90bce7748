/// The rules of one device's message queue, as FCM applies them (architecture §4):
///
/// - FIFO by message id.
/// - A message with a `collapse_key` replaces the pending message with the same key. At most
///   ``maxCollapseKeys`` distinct keys are pending per device; a fifth key evicts the **oldest** pending
///   collapsible message (the one with the smallest id).
/// - More than ``maxPendingNonCollapsible`` pending non-collapsible messages: all of them are dropped, one
///   `deleted_messages` marker is queued in place of any earlier one (so that it comes after every id the
///   device has seen), then the new message is queued after the marker.
/// - A time to live of 0 means "deliver now or drop": such a message is never stored.
/// - Expired messages are not pending: they count toward no limit and are removed when met.
///
/// The policy is pure: the store loads a ``QueuePolicy/State`` for a device inside its write transaction, feeds
/// arrivals to ``QueuePolicy/Machine``, and executes the returned actions in order in the same transaction.
public struct QueuePolicy: Sendable, Hashable {
    /// Pending non-collapsible messages a device may hold; one more drops them all (FCM: 100).
    public var maxPendingNonCollapsible: Int
    /// Distinct collapse keys a device may hold pending (FCM: 4).
    public var maxCollapseKeys: Int

    /// Creates a policy; the defaults are FCM's limits.
    public init(maxPendingNonCollapsible: Int = 100, maxCollapseKeys: Int = 4) {
        precondition(maxPendingNonCollapsible >= 1 && maxCollapseKeys >= 1, "queue limits must be positive")
        self.maxPendingNonCollapsible = maxPendingNonCollapsible
        self.maxCollapseKeys = maxCollapseKeys
    }

    /// One stored collapsible message, as the store lists it to build a ``State``.
    public struct CollapsibleEntry: Sendable, Hashable {
        /// The stored message's id.
        public var id: Int64
        /// Its collapse key.
        public var collapseKey: String
        /// When it expires, microseconds since the Unix epoch.
        public var expiresAtMicros: Int64

        /// Creates an entry.
        public init(id: Int64, collapseKey: String, expiresAtMicros: Int64) {
            self.id = id
            self.collapseKey = collapseKey
            self.expiresAtMicros = expiresAtMicros
        }
    }

    /// What the policy needs to know of one device's stored messages.
    public struct State: Sendable, Hashable {
        /// Stored, unexpired, non-collapsible messages (the `deleted_messages` marker excluded).
        public var pendingNonCollapsible: Int
        /// Every stored collapsible message, expired or not, in any order.
        public var collapsible: [CollapsibleEntry]

        /// Creates a state; the default is an empty queue.
        public init(pendingNonCollapsible: Int = 0, collapsible: [CollapsibleEntry] = []) {
            self.pendingNonCollapsible = pendingNonCollapsible
            self.collapsible = collapsible
        }
    }

    /// A message arriving for the device.
    public struct Arrival: Sendable, Hashable {
        /// The collapse key, or nil for a non-collapsible message.
        public var collapseKey: String?
        /// Time to live in seconds; 0 means deliver now or drop.
        public var timeToLiveSeconds: Int64

        /// Creates an arrival.
        public init(collapseKey: String?, timeToLiveSeconds: Int64) {
            self.collapseKey = collapseKey
            self.timeToLiveSeconds = timeToLiveSeconds
        }
    }

    /// What the store must do, in order, inside the transaction.
    public enum Action: Sendable, Hashable {
        /// Delete these stored messages: expired collapsible ones, which were never going to be delivered.
        case remove(ids: [Int64])
        /// Delete these stored, unexpired collapsible messages: replaced by the arrival with the same key, or evicted
        /// as the oldest when a key past ``QueuePolicy/maxCollapseKeys`` arrives. They are dropped undelivered
        /// (counted as `collapsed`).
        case collapse(ids: [Int64])
        /// Delete every stored non-collapsible message of the device (the overflow rule), an earlier
        /// `deleted_messages` marker included; `count` of them were pending and unexpired (counted as `overflow`).
        case removeAllNonCollapsible(count: Int)
        /// Store a `deleted_messages` marker with this id.
        case storeDeletedMessagesMarker(id: Int64)
        /// Store the arriving message with this id.
        case store(id: Int64)
        /// Do not store the message (time to live 0): deliver it now to a connected device or drop it.
        case deliverNowOrDrop
    }

    /// The state machine of one device's queue during one write transaction.
    public struct Machine: Sendable, Hashable {
        /// The limits applied.
        public let policy: QueuePolicy
        /// The queue as the machine currently sees it.
        public private(set) var state: State

        /// Starts from a state loaded by the store.
        public init(policy: QueuePolicy, state: State) {
            self.policy = policy
            self.state = state
        }

        /// A message arrives. `nowMicros` is the current time and `nextID` hands out increasing ids; the machine
        /// asks for an id for each row it stores, in queue order.
        public mutating func enqueue(
            _ arrival: Arrival,
            nowMicros: Int64,
            nextID: () -> Int64
        ) -> [Action] {
            if arrival.timeToLiveSeconds <= 0 {
                return [.deliverNowOrDrop]
            }
            let expiresAt = nowMicros &+ arrival.timeToLiveSeconds &* 1_000_000
            guard let key = arrival.collapseKey else {
                return self.enqueueNonCollapsible(nextID: nextID)
            }
            return self.enqueueCollapsible(key: key, expiresAtMicros: expiresAt, nowMicros: nowMicros, nextID: nextID)
        }

        private mutating func enqueueNonCollapsible(nextID: () -> Int64) -> [Action] {
            var actions: [Action] = []
            if self.state.pendingNonCollapsible >= self.policy.maxPendingNonCollapsible {
                // The earlier marker goes with the rest and a new one takes its place, after every id the device
                // has seen: a device that received the earlier marker (and acknowledges up to a later id when it
                // reconnects) must still hear of this drop.
                actions.append(.removeAllNonCollapsible(count: self.state.pendingNonCollapsible))
                actions.append(.storeDeletedMessagesMarker(id: nextID()))
                self.state.pendingNonCollapsible = 0
            }
            actions.append(.store(id: nextID()))
            self.state.pendingNonCollapsible += 1
            return actions
        }

        private mutating func enqueueCollapsible(
            key: String,
            expiresAtMicros: Int64,
            nowMicros: Int64,
            nextID: () -> Int64
        ) -> [Action] {
            // Expired entries go; the entry with the same key is replaced.
            var expired: [Int64] = []
            var collapsed: [Int64] = []
            var kept: [CollapsibleEntry] = []
            kept.reserveCapacity(self.state.collapsible.count)
            for entry in self.state.collapsible {
                if entry.expiresAtMicros <= nowMicros {
                    expired.append(entry.id)
                } else if entry.collapseKey == key {
                    collapsed.append(entry.id)
                } else {
                    kept.append(entry)
                }
            }
            // Keep at most maxCollapseKeys - 1 other keys: evict the oldest.
            kept.sort { $0.id < $1.id }
            while kept.count >= self.policy.maxCollapseKeys {
                collapsed.append(kept.removeFirst().id)
            }
            var actions: [Action] = []
            if !expired.isEmpty {
                actions.append(.remove(ids: expired.sorted()))
            }
            if !collapsed.isEmpty {
                actions.append(.collapse(ids: collapsed.sorted()))
            }
            let id = nextID()
            actions.append(.store(id: id))
            kept.append(CollapsibleEntry(id: id, collapseKey: key, expiresAtMicros: expiresAtMicros))
            self.state.collapsible = kept
            return actions
        }
    }
}
