import PushRelayCore

/// The per-device queues touched by one PostgreSQL write transaction, modelled in memory so that a whole batch of
/// sends and acknowledgements costs a fixed number of statements: lock the devices, load their rows, run the queue
/// policy here, then one statement deletes and inserts everything (`unnest` arrays).
///
/// The devices are locked (`FOR UPDATE`, in id order) before their rows are loaded, so the model is exact for the
/// transaction whichever node wrote before. New rows get provisional ids (above ``provisionalBase``, in the order
/// the policy asks for them) that become real once the transaction has taken its block of message ids
/// (`meta.last_message_id`): `real = base + (provisional - provisionalBase)`.
struct PostgresQueueBatch {
    struct Row {
        var kind: Int16
        var collapseKey: String?
        var expiresAt: Int64
        /// Only for new rows (to insert and to hand to the commit observer).
        var body: [UInt8]
    }

    struct DeviceQueue {
        var rows: [Int64: Row] = [:]
        var machine: QueuePolicy.Machine?
    }

    /// Provisional ids start above every real id (microseconds since 1970 stay far below 2^62).
    static let provisionalBase: Int64 = 1 << 62

    let policy: QueuePolicy
    let nowMicros: Int64
    let markerTimeToLive: Int64
    private(set) var queues: [DeviceID: DeviceQueue] = [:]
    /// Existing rows to delete.
    private(set) var deletions: [Int64] = []
    /// Devices whose existing non-collapsible messages all go (the overflow rule).
    private(set) var clearedDevices: Set<DeviceID> = []
    /// Unexpired messages the policy removed undelivered, for the drop observer.
    private(set) var dropped = DroppedMessages()
    /// Provisional ids handed out so far (the size of the id block to take).
    private(set) var provisionalCount: Int64 = 0

    init(policy: QueuePolicy, nowMicros: Int64, markerTimeToLive: Int64) {
        self.policy = policy
        self.nowMicros = nowMicros
        self.markerTimeToLive = markerTimeToLive
    }

    /// Records an existing (locked) device and its stored rows.
    mutating func load(device: DeviceID) {
        if self.queues[device] == nil { self.queues[device] = DeviceQueue() }
    }

    mutating func load(device: DeviceID, id: Int64, kind: Int16, collapseKey: String?, expiresAt: Int64) {
        self.queues[device, default: DeviceQueue()].rows[id] = Row(
            kind: kind, collapseKey: collapseKey, expiresAt: expiresAt, body: [])
    }

    /// Appends a message expiring at `expiresAt` under the policy; the provisional id, or nil if the device does
    /// not exist or the message already expired.
    mutating func append(device: DeviceID, body: [UInt8], collapseKey: String?, expiresAt: Int64) -> Int64? {
        let remaining = expiresAt - self.nowMicros
        guard remaining > 0, var queue = self.queues[device] else { return nil }
        var machine = queue.machine ?? self.machine(for: queue)
        var next = self.provisionalCount
        let actions = machine.enqueue(
            QueuePolicy.Arrival(collapseKey: collapseKey, timeToLiveSeconds: (remaining + 999_999) / 1_000_000),
            nowMicros: self.nowMicros,
            nextID: {
                next += 1
                return Self.provisionalBase + next
            }
        )
        self.provisionalCount = next
        queue.machine = machine
        var stored: Int64?
        for action in actions {
            self.dropped.count(action)
            switch action {
            case .remove(let ids), .collapse(let ids):
                for id in ids { self.remove(id, from: &queue) }
            case .removeAllNonCollapsible:
                for (id, row) in queue.rows where row.collapseKey == nil {
                    queue.rows[id] = nil
                }
                self.clearedDevices.insert(device)
            case .storeDeletedMessagesMarker(let id):
                queue.rows[id] = Row(
                    kind: 1, collapseKey: nil, expiresAt: self.nowMicros &+ self.markerTimeToLive, body: [])
            case .store(let id):
                queue.rows[id] = Row(kind: 0, collapseKey: collapseKey, expiresAt: expiresAt, body: body)
                stored = id
            case .deliverNowOrDrop:
                break
            }
        }
        self.queues[device] = queue
        return stored
    }

    /// Deletes the listed messages of the device; how many existed.
    mutating func acknowledge(device: DeviceID, ids: [MessageID]) -> Int {
        guard var queue = self.queues[device] else { return 0 }
        var count = 0
        for id in Set(ids.map(\.rowValue)) where id < Self.provisionalBase && queue.rows[id] != nil {
            self.remove(id, from: &queue)
            count += 1
        }
        queue.machine = nil
        self.queues[device] = queue
        return count
    }

    /// Deletes the device's messages up to and including `upTo`; how many existed.
    mutating func acknowledge(device: DeviceID, upTo: MessageID) -> Int {
        guard var queue = self.queues[device] else { return 0 }
        let ids = queue.rows.keys.filter { $0 <= upTo.rowValue && $0 < Self.provisionalBase }
        for id in ids { self.remove(id, from: &queue) }
        queue.machine = nil
        self.queues[device] = queue
        return ids.count
    }

    /// The new rows, in provisional id order.
    var insertions: [(id: Int64, device: DeviceID, row: Row)] {
        var rows: [(id: Int64, device: DeviceID, row: Row)] = []
        for (device, queue) in self.queues {
            for (id, row) in queue.rows where id > Self.provisionalBase {
                rows.append((id, device, row))
            }
        }
        return rows.sorted { $0.id < $1.id }
    }

    /// Whether the transaction has anything to write.
    var isEmpty: Bool { self.deletions.isEmpty && self.clearedDevices.isEmpty && self.provisionalCount == 0 }

    private mutating func remove(_ id: Int64, from queue: inout DeviceQueue) {
        guard queue.rows.removeValue(forKey: id) != nil else { return }
        if id < Self.provisionalBase {
            self.deletions.append(id)
        }
    }

    /// The policy machine of a queue as the model holds it (rows of this batch included).
    private func machine(for queue: DeviceQueue) -> QueuePolicy.Machine {
        var state = QueuePolicy.State()
        for (id, row) in queue.rows {
            if let key = row.collapseKey {
                state.collapsible.append(
                    QueuePolicy.CollapsibleEntry(id: id, collapseKey: key, expiresAtMicros: row.expiresAt))
            } else if row.kind == 0 && row.expiresAt > self.nowMicros {
                state.pendingNonCollapsible += 1
            }
        }
        return QueuePolicy.Machine(policy: self.policy, state: state)
    }
}
