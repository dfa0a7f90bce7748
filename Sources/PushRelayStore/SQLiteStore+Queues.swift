import NIOConcurrencyHelpers
public import PushRelayCore
extension SQLiteStore {
    /// See ``PushStore/enqueue(_:)``.
    public func enqueue(_ messages: [NewMessage]) async throws -> [EnqueueResult] {
        try await withCheckedThrowingContinuation { continuation in
            self.enqueue(messages) { continuation.resume(with: $0) }
        }
    }

    /// See ``PushStore/nextTransientMessageID()``.
    public func nextTransientMessageID() -> MessageID {
        MessageID(rawValue: self.context.nextMessageID(nowMicros: self.context.nowMicros))
    }

    /// See ``PushStore/pendingMessages(for:after:limit:)``.
    public func pendingMessages(for device: DeviceID, after: MessageID?, limit: Int) async throws -> [StoredMessage] {
        try await withCheckedThrowingContinuation { continuation in
            self.pendingMessages(for: device, after: after, limit: limit) { continuation.resume(with: $0) }
        }
    }

    /// See ``PushStore/pendingMessages(for:after:limit:completion:)``.
    public func pendingMessages(
        for device: DeviceID, after: MessageID?, limit: Int,
        completion: @escaping @Sendable (Result<[StoredMessage], any Error>) -> Void
    ) {
        guard limit > 0 else { return completion(.success([])) }
        let now = self.context.nowMicros
        self.readers.read({ connection throws(StoreError) in
            let select = try connection.statement(
                """
                SELECT id, kind, collapse_key, expires_at, body FROM messages INDEXED BY messages_queue
                WHERE device_id = ?1 AND id > ?2 AND expires_at > ?3
                ORDER BY id LIMIT ?4
                """
            )
            try select.bind(device.rawValue, at: 1)
            try select.bind(after?.rowValue ?? 0, at: 2)
            try select.bind(now, at: 3)
            try select.bind(limit, at: 4)
            var messages: [StoredMessage] = []
            while try select.step() {
                messages.append(
                    StoredMessage(
                        id: MessageID(rawValue: select.int64(0)),
                        device: device,
                        kind: select.int64(1) == 1 ? .deletedMessages : .message,
                        body: select.blob(4),
                        collapseKey: select.text(2),
                        expiresAtMicros: select.int64(3)
                    )
                )
            }
            return messages
        }, completion: { completion($0.mapError { $0 }) })
    }

    /// See ``PushStore/acknowledge(device:ids:)``.
    @discardableResult
    public func acknowledge(device: DeviceID, ids: [MessageID]) async throws -> Int {
        guard !ids.isEmpty else { return 0 }
        return try await self.writer.write { transaction in
            try transaction.acknowledge(device: device, ids: ids)
        }
    }

    /// See ``PushStore/acknowledge(device:upTo:)``.
    @discardableResult
    public func acknowledge(device: DeviceID, upTo: MessageID) async throws -> Int {
        try await self.writer.write { transaction in
            try transaction.acknowledge(device: device, upTo: upTo)
        }
    }

    /// See ``PushStore/purge(limit:)``. Expired messages in device queues are found by a sweep in id order, a chunk
    /// per write request, resuming where the last purge stopped (``ExpirySweep``): on a store of more than
    /// 200,000 messages an expired one can keep its row (never delivered, not counted against its queue's
    /// limits) until a later purge reaches it.
    public func purge(limit: Int) async throws -> PurgeReport {
        let expiredMessages = try await self.sweepExpiredMessages(limit: limit)
        var report = try await self.writer.write { transaction in
            let connection = transaction.connection
            var report = PurgeReport()
            let topics = try connection.statement("DELETE FROM topic_messages WHERE expires_at <= ?1 RETURNING id")
            try topics.bind(transaction.nowMicros, at: 1)
            while try topics.step() {
                transaction.finishedTopicMessages.append(topics.int64(0))
                report.expiredTopicMessages += 1
            }
            let keys = try connection.statement(
                "DELETE FROM server_keys WHERE valid_until IS NOT NULL AND valid_until <= ?1"
            )
            try keys.bind(transaction.nowMicros, at: 1)
            try keys.run()
            report.expiredServerKeys = connection.changes
            let tokens = try connection.statement("DELETE FROM access_tokens WHERE expires_at <= ?1")
            try tokens.bind(transaction.nowMicros, at: 1)
            try tokens.run()
            return report
        }
        report.expiredMessages = expiredMessages
        return report
    }

    /// Deletes up to `limit` expired messages, a chunk of the expiry sweep per write request (``ExpirySweep``);
    /// returns how many.
    private func sweepExpiredMessages(limit: Int) async throws -> Int {
        var deleted = 0
        let rows = self.context.configuration.expirySweepChunkRows
        for _ in 0..<self.context.configuration.expirySweepChunks where deleted < limit {
            let start = self.expirySweepCursor.withLockedValue { $0 }
            let left = limit - deleted
            let chunk = try await self.writer.write { transaction in
                try ExpirySweep.chunk(transaction, after: start, rows: rows, limit: left)
            }
            self.expirySweepCursor.withLockedValue { $0 = chunk.next }
            deleted += chunk.deleted
            if chunk.reachedEnd { break }
        }
        return deleted
    }

    /// See ``PushStore/queueStatistics()``.
    public func queueStatistics() async throws -> QueueStatistics {
        try await self.readers.read { connection throws(StoreError) in
            let select = try connection.statement(
                """
                SELECT (SELECT count(*) FROM messages),
                       (SELECT count(DISTINCT device_id) FROM messages),
                       (SELECT count(*) FROM topic_messages),
                       (SELECT count(*) FROM devices),
                       (SELECT count(*) FROM projects)
                """
            )
            _ = try select.step()
            let statistics = QueueStatistics(
                storedMessages: Int(select.int64(0)),
                devicesWithMessages: Int(select.int64(1)),
                topicMessagesExpanding: Int(select.int64(2)),
                devices: Int(select.int64(3)),
                projects: Int(select.int64(4))
            )
            try select.run()
            return statistics
        }
    }
}
