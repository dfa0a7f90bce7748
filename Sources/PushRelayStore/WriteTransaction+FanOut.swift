import PushRelayCore
import Logging

extension WriteTransaction {
    /// Whether one expansion step finished the topic message.
    enum FanOutStep: Equatable {
        /// More devices remain; the cursor was saved.
        case more
        /// The expansion is complete (or the message is gone or expired): its row was deleted.
        case finished
    }

    /// Commits a topic message row with its subscription snapshot; returns its id.
    func insertTopicMessage(_ message: NewTopicMessage) throws(StoreError) -> Int64 {
        let target = try message.storedTarget(compile: self.context.configuration.conditionCompiler)
        let snapshot = try self.connection.statement("SELECT coalesce(max(id), 0) FROM subscriptions")
        _ = try snapshot.step()
        let lastSubscription = snapshot.int64(0)
        try snapshot.run()
        let id = self.nextID()
        let insert = try self.connection.statement(
            """
            INSERT INTO topic_messages
                (id, project_id, topic, condition, snapshot, cursor, collapse_key, expires_at, created_at, body,
                 restricted_package_name)
            VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6, ?7, ?8, ?9, ?10)
            """
        )
        try insert.bind(id, at: 1)
        try insert.bind(message.project.rawValue, at: 2)
        try insert.bind(target.topic, at: 3)
        try insert.bind(target.condition, at: 4)
        try insert.bind(lastSubscription, at: 5)
        try insert.bind(message.collapseKey, at: 6)
        try insert.bind(self.nowMicros &+ target.timeToLiveMicros, at: 7)
        try insert.bind(self.nowMicros, at: 8)
        try insert.bind(message.body, at: 9)
        try insert.bind(message.restrictedPackageName, at: 10)
        try insert.run()
        self.newTopicMessages.append(id)
        return id
    }

    /// Expands the next `batchSize` candidate devices of topic message `id` into their queues and saves the cursor,
    /// all in this transaction: after a crash the expansion resumes after the last committed batch.
    func expandTopicMessage(id: Int64, batchSize: Int) throws(StoreError) -> FanOutStep {
        let load = try self.connection.statement(
            """
            SELECT project_id, topic, condition, snapshot, cursor, collapse_key, expires_at, body, restricted_package_name
            FROM topic_messages WHERE id = ?1
            """
        )
        try load.bind(id, at: 1)
        guard try load.step() else {
            // Deleted with its project, or purged after expiry.
            self.finishedTopicMessages.append(id)
            return .finished
        }
        let project = load.int64(0)
        let topic = load.text(1)
        let condition = load.text(2)
        let snapshot = load.int64(3)
        let cursor = load.int64(4)
        let collapseKey = load.text(5)
        let expiresAt = load.int64(6)
        let body = load.blob(7)
        let app = load.text(8)
        try load.run()

        guard expiresAt > self.nowMicros else {
            try self.deleteTopicMessage(id)
            return .finished
        }
        let batch: (devices: [DeviceID], lastScanned: Int64, exhausted: Bool)
        if let topic {
            batch = try self.topicCandidates(
                project: project, topic: topic, app: app, snapshot: snapshot, cursor: cursor, limit: batchSize
            )
        } else if let condition, let matcher = self.context.configuration.conditionCompiler(condition) {
            batch = try self.conditionCandidates(
                project: project, matcher: matcher, app: app, snapshot: snapshot, cursor: cursor, limit: batchSize
            )
        } else {
            self.context.logger.error(
                "topic message condition no longer compiles; dropping it",
                metadata: ["relay.topic_message.id": "\(id)"]
            )
            try self.deleteTopicMessage(id)
            return .finished
        }
        for device in batch.devices {
            _ = try self.append(device: device, body: body, collapseKey: collapseKey, expiresAt: expiresAt)
        }
        if batch.exhausted {
            try self.deleteTopicMessage(id)
            return .finished
        }
        let save = try self.connection.statement("UPDATE topic_messages SET cursor = ?1 WHERE id = ?2")
        try save.bind(batch.lastScanned, at: 1)
        try save.bind(id, at: 2)
        try save.run()
        return .more
    }

    private func deleteTopicMessage(_ id: Int64) throws(StoreError) {
        let delete = try self.connection.statement("DELETE FROM topic_messages WHERE id = ?1")
        try delete.bind(id, at: 1)
        try delete.run()
        self.finishedTopicMessages.append(id)
    }

    /// The next `limit` subscribers of `topic` after `cursor` (of app `app` when it is not nil).
    private func topicCandidates(
        project: Int64,
        topic: String,
        app: String?,
        snapshot: Int64,
        cursor: Int64,
        limit: Int
    ) throws(StoreError) -> (devices: [DeviceID], lastScanned: Int64, exhausted: Bool) {
        guard let topicID = try self.topicID(project: project, name: topic) else {
            return ([], cursor, true)
        }
        let select: SQLiteStatement
        if let app {
            // A restricted message: the devices of other apps are not candidates at all (skipped, not counted).
            select = try self.connection.statement(
                """
                SELECT s.device_id FROM subscriptions s JOIN devices d ON d.id = s.device_id
                WHERE s.topic_id = ?1 AND s.device_id > ?2 AND s.id <= ?3 AND d.app = ?5
                ORDER BY s.device_id LIMIT ?4
                """
            )
            try select.bind(app, at: 5)
        } else {
            select = try self.connection.statement(
                """
                SELECT device_id FROM subscriptions
                WHERE topic_id = ?1 AND device_id > ?2 AND id <= ?3
                ORDER BY device_id LIMIT ?4
                """
            )
        }
        try select.bind(topicID, at: 1)
        try select.bind(cursor, at: 2)
        try select.bind(snapshot, at: 3)
        try select.bind(limit, at: 4)
        var devices: [DeviceID] = []
        devices.reserveCapacity(limit)
        while try select.step() {
            devices.append(DeviceID(rawValue: select.int64(0)))
        }
        return (devices, devices.last?.rawValue ?? cursor, devices.count < limit)
    }

    /// The devices after `cursor` (of app `app` when it is not nil) whose subscriptions satisfy the condition,
    /// scanning at most `limit` devices subscribed to one of its topics.
    private func conditionCandidates(
        project: Int64,
        matcher: TopicConditionMatcher,
        app: String?,
        snapshot: Int64,
        cursor: Int64,
        limit: Int
    ) throws(StoreError) -> (devices: [DeviceID], lastScanned: Int64, exhausted: Bool) {
        var names: [Int64: String] = [:]
        for name in Set(matcher.topics) {
            if let topicID = try self.topicID(project: project, name: name) {
                names[topicID] = name
            }
        }
        guard !names.isEmpty else { return ([], cursor, true) }
        let placeholders = names.keys.sorted().map(String.init).joined(separator: ", ")
        // A restricted message: the devices of other apps are not scanned at all.
        let sql = app == nil
            ? """
            SELECT device_id, topic_id FROM subscriptions
            WHERE topic_id IN (\(placeholders)) AND device_id > ?1 AND id <= ?2
            ORDER BY device_id
            """
            : """
            SELECT s.device_id, s.topic_id FROM subscriptions s JOIN devices d ON d.id = s.device_id
            WHERE s.topic_id IN (\(placeholders)) AND s.device_id > ?1 AND s.id <= ?2 AND d.app = ?3
            ORDER BY s.device_id
            """
        return try self.connection.withUncachedStatement(sql) { select throws(StoreError) in
            try select.bind(cursor, at: 1)
            try select.bind(snapshot, at: 2)
            if let app { try select.bind(app, at: 3) }
            var matched: [DeviceID] = []
            var scanned = 0
            var current: Int64?
            var topics: Set<String> = []
            var lastScanned = cursor
            while try select.step() {
                let device = select.int64(0)
                if device != current {
                    if let current {
                        scanned += 1
                        lastScanned = current
                        if matcher.matches(topics) {
                            matched.append(DeviceID(rawValue: current))
                        }
                        if scanned == limit {
                            return (matched, lastScanned, false)
                        }
                    }
                    current = device
                    topics.removeAll(keepingCapacity: true)
                }
                if let name = names[select.int64(1)] {
                    topics.insert(name)
                }
            }
            if let current {
                lastScanned = current
                if matcher.matches(topics) {
                    matched.append(DeviceID(rawValue: current))
                }
            }
            return (matched, lastScanned, true)
        }
    }

    /// Topic messages whose expansion has not finished, oldest first.
    func pendingTopicMessageIDs() throws(StoreError) -> [Int64] {
        let select = try self.connection.statement("SELECT id FROM topic_messages ORDER BY id")
        var ids: [Int64] = []
        while try select.step() {
            ids.append(select.int64(0))
        }
        return ids
    }

    /// The id of a project's topic, or nil.
    func topicID(project: Int64, name: String) throws(StoreError) -> Int64? {
        let select = try self.connection.statement("SELECT id FROM topics WHERE project_id = ?1 AND name = ?2")
        try select.bind(project, at: 1)
        try select.bind(name, at: 2)
        guard try select.step() else { return nil }
        let id = select.int64(0)
        try select.run()
        return id
    }

    /// The topics that the devices in `devices` (a JSON array of ids) subscribe to. Read before the devices are
    /// removed, for ``deleteTopicsWithoutSubscribers(_:)`` after.
    func topicIDs(subscribedBy devices: String) throws(StoreError) -> [Int64] {
        let select = try self.connection.statement(
            "SELECT DISTINCT topic_id FROM subscriptions WHERE device_id IN (SELECT value FROM json_each(?1))")
        try select.bind(devices, at: 1)
        var ids: [Int64] = []
        while try select.step() { ids.append(select.int64(0)) }
        return ids
    }

    /// Deletes the topics among `ids` that no device subscribes to any more. A topic row lives as long as a
    /// subscription to it: otherwise every name ever subscribed stays in the store, and a device (whose client key
    /// ships in its app) could grow it without bound by subscribing to new names and unsubscribing. A topic
    /// message being expanded names its topic, not the row, and finds no subscriber either way.
    func deleteTopicsWithoutSubscribers(_ ids: [Int64]) throws(StoreError) {
        guard !ids.isEmpty else { return }
        let delete = try self.connection.statement(
            "DELETE FROM topics WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM subscriptions WHERE topic_id = ?1)")
        for id in ids {
            try delete.bind(id, at: 1)
            try delete.run()
        }
    }
}
