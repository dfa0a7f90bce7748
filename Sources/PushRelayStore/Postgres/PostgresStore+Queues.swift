public import PushRelayCore
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO

extension PostgresStore {
    /// See ``PushStore/enqueue(_:)``. Time-to-live-0 messages (never stored) are returned once every stored row this
    /// node numbered before them has reached its streams (``PostgresDeliveryOrder``).
    public func enqueue(_ messages: [NewMessage]) async throws -> [EnqueueResult] {
        try await withCheckedThrowingContinuation { continuation in
            self.enqueue(messages) { continuation.resume(with: $0) }
        }
    }

    /// See ``PushStore/enqueue(_:completion:)``: no task; `completion` runs on the writer's task, or — for
    /// time-to-live-0 messages behind rows still on their way to the streams — where those rows settle.
    public func enqueue(
        _ messages: [NewMessage], completion: @escaping @Sendable (Result<[EnqueueResult], any Error>) -> Void
    ) {
        let order = self.context.deliveryOrder
        if messages.allSatisfy({ $0.timeToLive <= .zero }) {
            // Nothing to store: number them for the live delivery without a commit.
            let results = messages.map { _ in EnqueueResult.transient(self.nextTransientMessageID()) }
            return order.waitForEarlierRows { completion(.success(results)) }
        }
        self.writer.hot(.enqueue(messages)) { outcome in
            switch outcome {
            case .success(.enqueued(let results)):
                if results.contains(where: { if case .transient = $0 { true } else { false } }) {
                    order.waitForEarlierRows { completion(.success(results)) }
                } else {
                    completion(.success(results))
                }
            case .success(.acknowledged):
                completion(.failure(StoreError.unavailable("unexpected writer result")))
            case .failure(let error):
                completion(.failure(error))
            }
        }
    }

    /// See ``PushStore/nextTransientMessageID()``: `max(now µs, last + 1)` past the last id this node saw taken,
    /// unique within the node (such a message is never stored).
    public func nextTransientMessageID() -> MessageID {
        let now = self.context.nowMicros
        return MessageID(rawValue: self.context.ids.withLockedValue { $0.next(nowMicros: now) })
    }

    /// See ``PushStore/pendingMessages(for:after:limit:)``.
    public func pendingMessages(for device: DeviceID, after: MessageID?, limit: Int) async throws -> [StoredMessage] {
        guard limit > 0 else { return [] }
        let now = self.context.nowMicros
        let rows = try await self.rows(
            """
            SELECT id, kind, collapse_key, expires_at, body FROM messages
            WHERE device_id = \(device.rawValue) AND id > \(after?.rowValue ?? 0) AND expires_at > \(now)
            ORDER BY id LIMIT \(limit)
            """
        )
        do {
            return try rows.map { row in
                let (id, kind, collapseKey, expiresAt, body) = try row.decode(
                    (Int64, Int16, String?, Int64, ByteBuffer).self)
                return StoredMessage(
                    id: MessageID(rawValue: id), device: device, kind: kind == 1 ? .deletedMessages : .message,
                    body: Array(body.readableBytesView), collapseKey: collapseKey, expiresAtMicros: expiresAt)
            }
        } catch {
            throw PostgresStoreContext.storeError(error)
        }
    }

    /// See ``PushStore/acknowledge(device:ids:)``.
    @discardableResult
    public func acknowledge(device: DeviceID, ids: [MessageID]) async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            self.acknowledge(device: device, ids: ids) { continuation.resume(with: $0) }
        }
    }

    /// See ``PushStore/acknowledge(device:ids:completion:)``: no task; `completion` runs on the writer's task.
    public func acknowledge(
        device: DeviceID, ids: [MessageID], completion: @escaping @Sendable (Result<Int, any Error>) -> Void
    ) {
        guard !ids.isEmpty else { return completion(.success(0)) }
        self.writer.hot(.acknowledge(device, ids)) { completion(Self.count($0)) }
    }

    /// See ``PushStore/acknowledge(device:upTo:)``.
    @discardableResult
    public func acknowledge(device: DeviceID, upTo: MessageID) async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            self.acknowledge(device: device, upTo: upTo) { continuation.resume(with: $0) }
        }
    }

    /// See ``PushStore/acknowledge(device:upTo:completion:)``: no task; `completion` runs on the writer's task.
    public func acknowledge(
        device: DeviceID, upTo: MessageID, completion: @escaping @Sendable (Result<Int, any Error>) -> Void
    ) {
        self.writer.hot(.acknowledgeUpTo(device, upTo)) { completion(Self.count($0)) }
    }

    /// An acknowledgement's count from the writer's outcome.
    private static func count(_ outcome: Result<PostgresHotRequest.Result, any Error>) -> Result<Int, any Error> {
        switch outcome {
        case .success(.acknowledged(let count)): .success(count)
        case .success(.enqueued): .failure(StoreError.unavailable("unexpected writer result"))
        case .failure(let error): .failure(error)
        }
    }

    /// See ``PushStore/purge(limit:)``.
    public func purge(limit: Int) async throws -> PurgeReport {
        let skipped = self.context.skippedTopics.pending(limit: limit)
        let skippedGroups = self.context.skippedDeviceGroups.pending(limit: limit)
        let (report, checked, checkedGroups) = try await self.writer.write { write in
            // The topics device expiry had to skip: deleted if nobody subscribes to them now, unless they are
            // held again (then the next purge tries). The same for device groups and their members.
            let locked = try await Self.lockTopics(skipped, in: write, skipLocked: true)
            try await Self.deleteTopicsWithoutSubscribers(locked, in: write)
            let checked = try await Self.settled(skipped, locked: locked, table: "topics", in: write)
            let lockedGroups = try await Self.lockDeviceGroups(skippedGroups, in: write, skipLocked: true)
            try await Self.deleteDeviceGroupsWithoutMembers(lockedGroups, in: write)
            let checkedGroups = try await Self.settled(
                skippedGroups, locked: lockedGroups, table: "device_groups", in: write)
            var report = PurgeReport()
            report.expiredMessages = try await write.rows(
                """
                DELETE FROM messages WHERE id IN (
                    SELECT id FROM messages WHERE expires_at <= \(write.nowMicros) LIMIT \(max(limit, 0)))
                RETURNING id
                """
            ).count
            report.expiredTopicMessages = try await write.rows(
                "DELETE FROM topic_messages WHERE expires_at <= \(write.nowMicros) RETURNING id"
            ).count
            report.expiredServerKeys = try await write.rows(
                """
                DELETE FROM server_keys WHERE valid_until IS NOT NULL AND valid_until <= \(write.nowMicros)
                RETURNING project_id
                """
            ).count
            try await write.run("DELETE FROM access_tokens WHERE expires_at <= \(write.nowMicros)")
            return (report, checked, checkedGroups)
        }
        self.context.skippedTopics.settle(checked)
        self.context.skippedDeviceGroups.settle(checkedGroups)
        return report
    }

    /// Of the rows `skipped` of `table` that a purge tried to lock, those it is done with: the ones it locked
    /// (checked now) and the ones gone meanwhile (deleted by another path). Only rows still there and held by
    /// another transaction are left for the next purge, so the set of skipped rows drains.
    private static func settled(
        _ skipped: [Int64], locked: [Int64], table: String, in write: PostgresWriteContext
    ) async throws -> [Int64] {
        guard skipped.count > locked.count else { return locked }
        let present = try await write.rows(
            "SELECT id FROM \(unescaped: table) WHERE id = ANY(\(skipped)::bigint[])"
        ).map { try $0.decode(Int64.self) }
        let held = Set(present).subtracting(locked)
        return skipped.filter { !held.contains($0) }
    }

    /// See ``PushStore/queueStatistics()``.
    public func queueStatistics() async throws -> QueueStatistics {
        let rows = try await self.rows(
            """
            SELECT (SELECT count(*) FROM messages), (SELECT count(DISTINCT device_id) FROM messages),
                (SELECT count(*) FROM topic_messages), (SELECT count(*) FROM devices), (SELECT count(*) FROM projects)
            """
        )
        do {
            let (messages, devicesWithMessages, topicMessages, devices, projects) = try rows[0].decode(
                (Int64, Int64, Int64, Int64, Int64).self)
            return QueueStatistics(
                storedMessages: Int(messages), devicesWithMessages: Int(devicesWithMessages),
                topicMessagesExpanding: Int(topicMessages), devices: Int(devices), projects: Int(projects))
        } catch {
            throw PostgresStoreContext.storeError(error)
        }
    }
}
