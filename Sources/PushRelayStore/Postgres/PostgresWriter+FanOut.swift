import NIOCore
import PostgresNIO
import PushRelayCore

extension PostgresWriter {
    /// Expands the next batch of the oldest topic message that no other node holds (`FOR UPDATE SKIP LOCKED`)
    /// into its subscribers' queues and saves the cursor, in `write`'s transaction: a node that dies mid-way
    /// leaves the row at its last committed batch and another node resumes it. False when there was none.
    ///
    /// A message with a `restricted_package_name` takes only the devices of that app as candidates. A message's
    /// `visible` snapshot (schema version 6) leaves out the subscriptions whose transaction it does not see: those
    /// inserted before the send and committed after it, whose ids can be below `snapshot`. The filters are written
    /// `$n IS NULL OR …`: the statements are planned with their parameters (unnamed statements), so an absent
    /// restriction or snapshot folds away.
    func expandTopicMessage(in write: PostgresWriteContext) async throws -> Bool {
        let rows = try await write.rows(
            """
            SELECT id, project_id, topic, condition, snapshot, cursor, collapse_key, expires_at, body,
                restricted_package_name, visible::text
            FROM topic_messages ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED
            """
        )
        guard let row = rows.first else { return false }
        let (id, project, topic, condition, snapshot, cursor, collapseKey, expiresAt, body, app, visible) =
            try row.decode((Int64, Int64, String?, String?, Int64, Int64, String?, Int64, ByteBuffer, String?, String?).self)
        let subscribed = Subscribed(upTo: snapshot, visible: visible)
        guard expiresAt > write.nowMicros else {
            try await write.run("DELETE FROM topic_messages WHERE id = \(id)")
            return true
        }
        let batchSize = self.batchSize
        let candidates: (devices: [DeviceID], lastScanned: Int64, exhausted: Bool)
        if let topic {
            candidates = try await self.topicCandidates(
                project: project, topic: topic, app: app, subscribed: subscribed, cursor: cursor, limit: batchSize,
                in: write)
        } else if let condition, let matcher = self.conditionCompiler(condition) {
            candidates = try await self.conditionCandidates(
                project: project, matcher: matcher, app: app, subscribed: subscribed, cursor: cursor,
                limit: batchSize, in: write)
        } else {
            write.logger.error(
                "topic message condition no longer compiles; dropping it", metadata: ["relay.topic_message.id": "\(id)"])
            try await write.run("DELETE FROM topic_messages WHERE id = \(id)")
            return true
        }
        var batch = try await self.loadBatch(devices: Set(candidates.devices), in: write)
        let bytes = Array(body.readableBytesView)
        for device in candidates.devices {
            _ = batch.append(device: device, body: bytes, collapseKey: collapseKey, expiresAt: expiresAt)
        }
        try await self.flush(batch, in: write)
        if candidates.exhausted {
            try await write.run("DELETE FROM topic_messages WHERE id = \(id)")
        } else {
            try await write.run("UPDATE topic_messages SET cursor = \(candidates.lastScanned) WHERE id = \(id)")
        }
        return true
    }

    /// The next `limit` subscribers of `topic` after `cursor` (of app `app` when it is not nil).
    private func topicCandidates(
        project: Int64, topic: String, app: String?, subscribed: Subscribed, cursor: Int64, limit: Int,
        in write: PostgresWriteContext
    ) async throws -> (devices: [DeviceID], lastScanned: Int64, exhausted: Bool) {
        let rows = try await write.rows(
            """
            SELECT s.device_id FROM subscriptions s JOIN topics t ON t.id = s.topic_id
            WHERE t.project_id = \(project) AND t.name = \(topic) AND s.device_id > \(cursor)
                AND s.id <= \(subscribed.upTo) AND (\(subscribed.visible)::text IS NULL OR s.created_xid IS NULL
                    OR pg_visible_in_snapshot(s.created_xid, \(subscribed.visible)::pg_snapshot))
                AND (\(app)::text IS NULL
                    OR EXISTS (SELECT 1 FROM devices d WHERE d.id = s.device_id AND d.app = \(app)::text))
            ORDER BY s.device_id LIMIT \(limit)
            """
        )
        let devices = try rows.map { DeviceID(rawValue: try $0.decode(Int64.self)) }
        return (devices, devices.last?.rawValue ?? cursor, devices.count < limit)
    }

    /// The next `limit` devices subscribed to at least one topic the condition names (of app `app` when it is not
    /// nil), and those among them whose topics satisfy it.
    private func conditionCandidates(
        project: Int64, matcher: TopicConditionMatcher, app: String?, subscribed: Subscribed, cursor: Int64,
        limit: Int, in write: PostgresWriteContext
    ) async throws -> (devices: [DeviceID], lastScanned: Int64, exhausted: Bool) {
        let names = Array(Set(matcher.topics))
        var topicNames: [Int64: String] = [:]
        for row in try await write.rows(
            "SELECT id, name FROM topics WHERE project_id = \(project) AND name = ANY(\(names))")
        {
            let (id, name) = try row.decode((Int64, String).self)
            topicNames[id] = name
        }
        guard !topicNames.isEmpty else { return ([], cursor, true) }
        let topicIDs = Array(topicNames.keys)
        let scanned = try await write.rows(
            """
            SELECT DISTINCT s.device_id FROM subscriptions s
            WHERE s.topic_id = ANY(\(topicIDs)) AND s.device_id > \(cursor) AND s.id <= \(subscribed.upTo)
                AND (\(subscribed.visible)::text IS NULL OR s.created_xid IS NULL
                    OR pg_visible_in_snapshot(s.created_xid, \(subscribed.visible)::pg_snapshot))
                AND (\(app)::text IS NULL
                    OR EXISTS (SELECT 1 FROM devices d WHERE d.id = s.device_id AND d.app = \(app)::text))
            ORDER BY s.device_id LIMIT \(limit)
            """
        ).map { try $0.decode(Int64.self) }
        guard let last = scanned.last else { return ([], cursor, true) }
        var topics: [Int64: Set<String>] = [:]
        for row in try await write.rows(
            """
            SELECT device_id, topic_id FROM subscriptions
            WHERE topic_id = ANY(\(topicIDs)) AND device_id = ANY(\(scanned)) AND id <= \(subscribed.upTo)
                AND (\(subscribed.visible)::text IS NULL OR created_xid IS NULL
                    OR pg_visible_in_snapshot(created_xid, \(subscribed.visible)::pg_snapshot))
            """
        ) {
            let (device, topic) = try row.decode((Int64, Int64).self)
            if let name = topicNames[topic] { topics[device, default: []].insert(name) }
        }
        let matched = scanned.filter { matcher.matches(topics[$0] ?? []) }.map { DeviceID(rawValue: $0) }
        return (matched, last, scanned.count < limit)
    }

    /// Which subscriptions a topic message's expansion takes: those with an id up to `upTo` (the largest id its
    /// send saw) whose transaction `visible` (its send's snapshot, as text; nil for a message of before schema
    /// version 6) sees. A row without `created_xid` was committed before the migration that added it.
    struct Subscribed {
        var upTo: Int64
        var visible: String?
    }
}
