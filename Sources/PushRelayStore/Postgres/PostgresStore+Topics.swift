public import PushRelayCore
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO

extension PostgresStore {
    /// See ``PushStore/subscribe(tokens:to:project:)``.
    public func subscribe(
        tokens: [String],
        to topic: String,
        project: ProjectID
    ) async throws -> [TopicMembershipResult] {
        guard !topic.isEmpty else { throw StoreError.invalidArgument("empty topic name") }
        let maxTopics = self.context.configuration.maxTopicsPerDevice
        return try await self.writer.write { write in
            let devices = try await Self.lookUp(tokens: tokens, project: project, in: write)
            guard devices.contains(where: { if case .success = $0 { true } else { false } }) else {
                return devices.map { if case .failure(let result) = $0 { result } else { .ok } }
            }
            let topicID = try await write.rows(
                """
                INSERT INTO topics (project_id, name) VALUES (\(project.rawValue), \(topic))
                ON CONFLICT (project_id, name) DO UPDATE SET name = EXCLUDED.name RETURNING id
                """
            )[0].decode(Int64.self)
            var results: [TopicMembershipResult] = []
            results.reserveCapacity(tokens.count)
            for lookup in devices {
                guard case .success(let device) = lookup else {
                    if case .failure(let result) = lookup { results.append(result) }
                    continue
                }
                let existing = try await write.rows(
                    "SELECT 1 FROM subscriptions WHERE topic_id = \(topicID) AND device_id = \(device.rawValue)")
                if !existing.isEmpty {
                    results.append(.ok)
                    continue
                }
                let held = try await write.rows(
                    "SELECT count(*) FROM subscriptions WHERE device_id = \(device.rawValue)")[0].decode(Int64.self)
                guard held < maxTopics else {
                    results.append(.tooManyTopics)
                    continue
                }
                try await write.run(
                    """
                    INSERT INTO subscriptions (topic_id, device_id, added_at)
                    VALUES (\(topicID), \(device.rawValue), \(write.nowMicros)) ON CONFLICT DO NOTHING
                    """
                )
                results.append(.ok)
            }
            // A topic created here for subscriptions that were all refused (too many topics) is not kept.
            try await Self.deleteTopicsWithoutSubscribers([topicID], in: write)
            return results
        }
    }

    /// See ``PushStore/unsubscribe(tokens:from:project:)``.
    public func unsubscribe(
        tokens: [String],
        from topic: String,
        project: ProjectID
    ) async throws -> [TopicMembershipResult] {
        try await self.writer.write { write in
            let devices = try await Self.lookUp(tokens: tokens, project: project, in: write)
            let ids = devices.compactMap { if case .success(let device) = $0 { device.rawValue } else { nil } }
            if !ids.isEmpty {
                // The topic's row first, waiting for whoever holds it (``deleteTopicsWithoutSubscribers``).
                let topics = try await write.rows(
                    "SELECT id FROM topics WHERE project_id = \(project.rawValue) AND name = \(topic) FOR UPDATE")
                if let topicID = try topics.first?.decode(Int64.self) {
                    try await write.run(
                        "DELETE FROM subscriptions WHERE topic_id = \(topicID) AND device_id = ANY(\(ids))")
                    try await Self.deleteTopicsWithoutSubscribers([topicID], in: write)
                }
            }
            return devices.map { if case .failure(let result) = $0 { result } else { .ok } }
        }
    }

    /// Deletes the topics among `ids` that no device subscribes to any more. A topic row lives as long as a
    /// subscription to it: otherwise every name ever subscribed stays in the database, and a device (whose client
    /// key ships in its app) could grow it without bound by subscribing to new names and unsubscribing. A topic
    /// message being expanded names its topic, not the row, and finds no subscriber either way.
    ///
    /// Every change to a topic's subscriptions holds its row first: a subscribe by its upsert, an unsubscribe and a
    /// device's removal by `FOR UPDATE` (``lockTopics(_:in:skipLocked:)``), until they commit. So when the rows are
    /// locked here, every other change to them has committed, and the `DELETE`, a statement of its own and so a
    /// snapshot of its own, sees them all (one statement that locked and checked would check under its first
    /// snapshot, and could delete a row whose subscription had just committed, and the subscription with it). A
    /// subscribe that comes after waits for this transaction, and finds the row gone (it makes a new one) or kept.
    static func deleteTopicsWithoutSubscribers(_ ids: [Int64], in write: PostgresWriteContext) async throws {
        guard !ids.isEmpty else { return }
        try await write.run(
            """
            DELETE FROM topics t WHERE t.id = ANY(\(ids)::bigint[])
                AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.topic_id = t.id)
            """)
    }

    /// Locks the rows of topics `ids` (in id order, so that two transactions locking several never deadlock) and
    /// returns those it locked: all, waiting for their holders, or with `skipLocked` only those nobody holds (for
    /// device expiry, which holds the devices first: waiting there could deadlock with a subscribe that holds its
    /// topic and waits for the device; a topic skipped is checked again by the next purge,
    /// ``PostgresStoreContext/skippedTopics``).
    static func lockTopics(_ ids: [Int64], in write: PostgresWriteContext, skipLocked: Bool) async throws -> [Int64] {
        guard !ids.isEmpty else { return [] }
        let rows = try await write.rows(
            """
            SELECT id FROM topics WHERE id = ANY(\(ids)::bigint[]) ORDER BY id
            FOR UPDATE \(unescaped: skipLocked ? "SKIP LOCKED" : "")
            """)
        return try rows.map { try $0.decode(Int64.self) }
    }

    /// See ``PushStore/subscriptions(of:)``.
    public func subscriptions(of device: DeviceID) async throws -> [TopicSubscription] {
        let rows = try await self.rows(
            """
            SELECT t.name, s.added_at FROM subscriptions s JOIN topics t ON t.id = s.topic_id
            WHERE s.device_id = \(device.rawValue) ORDER BY t.name
            """
        )
        do {
            return try rows.map { row in
                let (name, addedAt) = try row.decode((String, Int64).self)
                return TopicSubscription(topic: name, addedAt: StoreContext.date(micros: addedAt))
            }
        } catch {
            throw PostgresStoreContext.storeError(error)
        }
    }

    /// See ``PushStore/enqueueTopicMessage(_:)``.
    public func enqueueTopicMessage(_ message: NewTopicMessage) async throws -> MessageID {
        try await withCheckedThrowingContinuation { continuation in
            self.enqueueTopicMessage(message) { continuation.resume(with: $0) }
        }
    }

    /// See ``PushStore/enqueueTopicMessage(_:completion:)``: no task of the caller's; `completion` runs on the
    /// writer's task after the commit (at once for a message refused before the store).
    public func enqueueTopicMessage(
        _ message: NewTopicMessage, completion: @escaping @Sendable (Result<MessageID, any Error>) -> Void
    ) {
        let target: NewTopicMessage.StoredTarget
        do {
            target = try message.storedTarget(compile: self.context.configuration.conditionCompiler)
        } catch {
            return completion(.failure(error))
        }
        let context = self.context
        self.writer.write({ write in
            let floor = context.ids.withLockedValue { max(write.nowMicros, $0.last + 1) }
            guard try await !write.rows("SELECT 1 FROM projects WHERE id = \(message.project.rawValue)").isEmpty else {
                throw StoreError.notFound("no project with id \(message.project)")
            }
            // The id from the same block row as queue rows: increasing with them.
            let id = try await write.rows(
                """
                UPDATE meta SET value = greatest(value + 1, \(floor))
                WHERE key = 'last_message_id' RETURNING value
                """
            )[0].decode(Int64.self)
            context.ids.withLockedValue { $0.advance(past: id) }
            // The snapshot: the largest subscription id this statement sees, and (`visible`) the statement's own
            // transaction snapshot. An id is taken at insert, not at commit, so a subscription that another node
            // inserted before this statement and commits after it may have a smaller id; its transaction is in
            // progress in `visible`, and the expansion leaves it out (`created_xid`, schema version 6).
            try await write.run(
                """
                INSERT INTO topic_messages
                    (id, project_id, topic, condition, snapshot, cursor, collapse_key, expires_at, created_at, body,
                     restricted_package_name, visible)
                VALUES (\(id), \(message.project.rawValue), \(target.topic), \(target.condition),
                    (SELECT coalesce(max(id), 0) FROM subscriptions), 0, \(message.collapseKey),
                    \(write.nowMicros &+ target.timeToLiveMicros), \(write.nowMicros), \(ByteBuffer(bytes: message.body)),
                    \(message.restrictedPackageName), pg_current_snapshot())
                """
            )
            write.topicMessageAdded = true
            return MessageID(rawValue: id)
        }, completion: completion)
    }

    private enum TokenLookup {
        case success(DeviceID)
        case failure(TopicMembershipResult)
    }

    /// The devices of these tokens in one query: found in the project, in another project, or unknown.
    private static func lookUp(
        tokens: [String],
        project: ProjectID,
        in write: PostgresWriteContext
    ) async throws -> [TokenLookup] {
        var found: [String: (Int64, Int64)] = [:]
        for row in try await write.rows("SELECT token, id, project_id FROM devices WHERE token = ANY(\(tokens))") {
            let (token, id, owner) = try row.decode((String, Int64, Int64).self)
            found[token] = (id, owner)
        }
        return tokens.map { token in
            guard let (id, owner) = found[token] else { return .failure(.notFound) }
            return owner == project.rawValue ? .success(DeviceID(rawValue: id)) : .failure(.wrongProject)
        }
    }
}
