import PushRelayCore

/// One write transaction of the writer thread, shared by the requests of a group. It carries the queue policy
/// machines of the devices touched so far (loaded once per device per transaction) and what to do after the commit.
final class WriteTransaction {
    let connection: SQLiteConnection
    let context: StoreContext
    /// Fixed for the transaction: expiry and ids use one clock reading.
    let nowMicros: Int64

    /// Queue machines of devices, kept by the writer across transactions (see ``QueueStateCache``).
    private let queues: QueueStateCache
    /// The rows this transaction appended to device queues (messages and `deleted_messages` markers), in id order:
    /// after the commit, live streams write them without reading the store back.
    private(set) var appendedMessages: [StoredMessage] = []
    /// Set by the store's write probe; see ``provesCapacity``.
    var isProbe = false
    /// Whether this commit shows the store has room for messages again (see ``CommitHealth``): it stored messages,
    /// or it was the probe.
    var provesCapacity: Bool { self.isProbe || !self.appendedMessages.isEmpty }
    /// Unexpired messages this transaction removed undelivered, for the drop observer.
    var dropped = DroppedMessages()
    /// Set by writes that can turn an auth-cache hit into a miss; the epoch is bumped before the commit.
    var authChanged = false
    /// Devices removed by this transaction with their secret hashes, when that is its only credential change
    /// (``evictDevice(_:secret:)``): the epoch is bumped for other processes, and this one drops just these.
    private(set) var evictedDevices: [(device: Device, secret: KeyHash)] = []
    /// The new auth epoch, when bumped.
    private(set) var newAuthEpoch: Int64?
    /// Topic messages committed in this transaction, to hand to the fan-out after the commit.
    var newTopicMessages: [Int64] = []
    /// Topic messages whose expansion finished (row deleted) in this transaction.
    var finishedTopicMessages: [Int64] = []

    init(connection: SQLiteConnection, context: StoreContext, queues: QueueStateCache) {
        self.connection = connection
        self.context = context
        self.queues = queues
        self.nowMicros = context.nowMicros
    }

    /// A new message id.
    func nextID() -> Int64 {
        self.context.nextMessageID(nowMicros: self.nowMicros)
    }

    /// Forgets the loaded queue states (after a write that changed queues behind the machines' back).
    func discardQueueStates() {
        self.queues.removeAll()
    }

    /// Forgets one device's loaded queue state.
    func discardQueueState(of device: DeviceID) {
        self.queues.remove(device)
    }

    // MARK: Enqueue

    /// Appends one message to its device's queue under the queue policy.
    func enqueue(_ message: NewMessage) throws(StoreError) -> EnqueueResult {
        let ttl = StoreContext.micros(message.timeToLive)
        if ttl <= 0 {
            return .transient(MessageID(rawValue: self.nextID()))
        }
        guard
            let id = try self.append(
                device: message.device, body: message.body, collapseKey: message.collapseKey,
                expiresAt: self.nowMicros &+ ttl
            )
        else {
            return .deviceNotFound
        }
        return .stored(MessageID(rawValue: id))
    }

    /// Appends a message expiring at `expiresAt` (microseconds) to a device's queue; nil if the device does not exist
    /// or the message is already expired.
    func append(device: DeviceID, body: [UInt8], collapseKey: String?, expiresAt: Int64) throws(StoreError) -> Int64? {
        let remaining = expiresAt - self.nowMicros
        guard remaining > 0 else { return nil }
        guard var queue = try self.queue(of: device) else { return nil }
        let arrival = QueuePolicy.Arrival(
            collapseKey: collapseKey,
            timeToLiveSeconds: (remaining + 999_999) / 1_000_000
        )
        let actions = queue.machine.enqueue(arrival, nowMicros: self.nowMicros, nextID: { self.nextID() })
        queue.validUntil = min(queue.validUntil, expiresAt)
        self.queues.set(queue, for: device)
        var storedID: Int64?
        for action in actions {
            self.dropped.count(action)
            switch action {
            case .remove(let ids), .collapse(let ids):
                let delete = try self.connection.statement("DELETE FROM messages WHERE id = ?1")
                for id in ids {
                    try delete.bind(id, at: 1)
                    try delete.run()
                }
            case .removeAllNonCollapsible:
                let delete = try self.connection.statement(
                    "DELETE FROM messages WHERE device_id = ?1 AND collapse_key IS NULL"
                )
                try delete.bind(device.rawValue, at: 1)
                try delete.run()
            case .storeDeletedMessagesMarker(let id):
                let ttl = StoreContext.micros(self.context.configuration.deletedMessagesTimeToLive)
                try self.insertMessage(
                    id: id, device: device, kind: 1, collapseKey: nil, expiresAt: self.nowMicros &+ ttl, body: []
                )
                self.appendedMessages.append(
                    StoredMessage(
                        id: MessageID(rawValue: id), device: device, kind: .deletedMessages, body: [],
                        collapseKey: nil, expiresAtMicros: self.nowMicros &+ ttl
                    )
                )
            case .store(let id):
                try self.insertMessage(
                    id: id, device: device, kind: 0, collapseKey: collapseKey, expiresAt: expiresAt, body: body
                )
                self.appendedMessages.append(
                    StoredMessage(
                        id: MessageID(rawValue: id), device: device, kind: .message, body: body,
                        collapseKey: collapseKey, expiresAtMicros: expiresAt
                    )
                )
                storedID = id
            case .deliverNowOrDrop:
                return nil
            }
        }
        return storedID
    }

    private func insertMessage(
        id: Int64,
        device: DeviceID,
        kind: Int64,
        collapseKey: String?,
        expiresAt: Int64,
        body: [UInt8]
    ) throws(StoreError) {
        let insert = try self.connection.statement(
            "INSERT INTO messages (id, device_id, kind, collapse_key, expires_at, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
        )
        try insert.bind(id, at: 1)
        try insert.bind(device.rawValue, at: 2)
        try insert.bind(kind, at: 3)
        try insert.bind(collapseKey, at: 4)
        try insert.bind(expiresAt, at: 5)
        try insert.bind(body, at: 6)
        try insert.run()
    }

    /// The device's queue machine, loaded from the database on first use in this transaction; nil if the device
    /// does not exist.
    private func queue(of device: DeviceID) throws(StoreError) -> QueueStateCache.Entry? {
        if let cached = self.queues.entry(for: device, nowMicros: self.nowMicros) {
            return cached
        }
        let summary = try self.connection.statement(
            """
            SELECT
                (SELECT count(*) FROM messages
                    WHERE device_id = ?1 AND collapse_key IS NULL AND kind = 0 AND expires_at > ?2),
                (SELECT min(expires_at) FROM messages
                    WHERE device_id = ?1 AND collapse_key IS NULL AND expires_at > ?2)
            FROM devices WHERE id = ?1
            """
        )
        try summary.bind(device.rawValue, at: 1)
        try summary.bind(self.nowMicros, at: 2)
        guard try summary.step() else {
            return nil
        }
        var state = QueuePolicy.State(pendingNonCollapsible: Int(summary.int64(0)))
        let validUntil = summary.isNull(1) ? Int64.max : summary.int64(1)
        try summary.run()
        let collapsible = try self.connection.statement(
            "SELECT id, collapse_key, expires_at FROM messages WHERE device_id = ?1 AND collapse_key IS NOT NULL"
        )
        try collapsible.bind(device.rawValue, at: 1)
        while try collapsible.step() {
            state.collapsible.append(
                QueuePolicy.CollapsibleEntry(
                    id: collapsible.int64(0),
                    collapseKey: collapsible.text(1) ?? "",
                    expiresAtMicros: collapsible.int64(2)
                )
            )
        }
        let queue = QueueStateCache.Entry(
            machine: QueuePolicy.Machine(policy: self.context.configuration.queuePolicy, state: state),
            validUntil: validUntil
        )
        self.queues.set(queue, for: device)
        return queue
    }

    // MARK: Acknowledge

    /// Deletes the listed messages of the device.
    func acknowledge(device: DeviceID, ids: [MessageID]) throws(StoreError) -> Int {
        let delete = try self.connection.statement("DELETE FROM messages WHERE id = ?1 AND device_id = ?2")
        var deleted = 0
        for id in ids {
            try delete.bind(id.rowValue, at: 1)
            try delete.bind(device.rawValue, at: 2)
            try delete.run()
            deleted += self.connection.changes
        }
        self.discardQueueState(of: device)
        return deleted
    }

    /// Deletes the device's messages up to and including `upTo`.
    func acknowledge(device: DeviceID, upTo: MessageID) throws(StoreError) -> Int {
        let delete = try self.connection.statement(
            "DELETE FROM messages INDEXED BY messages_queue WHERE device_id = ?1 AND id <= ?2"
        )
        try delete.bind(device.rawValue, at: 1)
        try delete.bind(upTo.rowValue, at: 2)
        try delete.run()
        self.discardQueueState(of: device)
        return self.connection.changes
    }

    // MARK: Commit

    /// Records that `device` (whose secret hashes to `secret`) was removed: the auth epoch is bumped as for
    /// ``authChanged``, but this process's cache drops only this device (``AuthCache/evict(devices:epoch:)``).
    func evictDevice(_ device: Device, secret: KeyHash) {
        self.evictedDevices.append((device, secret))
    }

    /// How far past the id generator's position `meta.last_message_id` is written: a second of ids.
    ///
    /// The generator restarts from that row, so every id handed out must be at or below it. Writing the exact
    /// position cost every commit one more page in the WAL (`meta`, next to the message row and its index entries:
    /// ~4.4 frames per single-send commit when there were two indexes); written a second ahead, the row changes
    /// about once a second.
    /// The price: a daemon restarted within a second of its last id hands out ids up to a second ahead of its clock
    /// (ids are microsecond times bumped to stay increasing; nothing reads them as exact times).
    static let idReservationMicros: Int64 = 1_000_000

    /// Writes what must be committed with the group: the id generator's reserved position (when the generator
    /// passed the one written) and the auth epoch. Returns the position `meta` now holds.
    func finish(persistedLastID: Int64) throws(StoreError) -> Int64 {
        let last = self.context.lastMessageID
        var persisted = persistedLastID
        if last > persistedLastID {
            persisted = last + Self.idReservationMicros
            let update = try self.connection.statement("UPDATE meta SET value = ?1 WHERE key = 'last_message_id'")
            try update.bind(persisted, at: 1)
            try update.run()
        }
        if self.authChanged || !self.evictedDevices.isEmpty {
            let bump = try self.connection.statement(
                "UPDATE meta SET value = value + 1 WHERE key = 'auth_epoch' RETURNING value"
            )
            if try bump.step() {
                self.newAuthEpoch = bump.int64(0)
            }
            try bump.run()
        }
        return persisted
    }
}
