public import PushRelayCore
extension SQLiteStore {
    /// See ``PushStore/subscribe(tokens:to:project:)``.
    public func subscribe(
        tokens: [String],
        to topic: String,
        project: ProjectID
    ) async throws -> [TopicMembershipResult] {
        guard !topic.isEmpty else { throw StoreError.invalidArgument("empty topic name") }
        let maxTopics = self.context.configuration.maxTopicsPerDevice
        return try await self.writer.write(isolated: true) { transaction in
            let connection = transaction.connection
            var topicID = try transaction.topicID(project: project.rawValue, name: topic)
            var results: [TopicMembershipResult] = []
            results.reserveCapacity(tokens.count)
            for token in tokens {
                let device: DeviceID
                switch try Self.lookUp(token: token, project: project, in: connection) {
                case .failure(let result):
                    results.append(result)
                    continue
                case .success(let found):
                    device = found
                }
                let id: Int64
                if let topicID {
                    id = topicID
                } else {
                    let insert = try connection.statement(
                        "INSERT INTO topics (project_id, name) VALUES (?1, ?2) RETURNING id"
                    )
                    try insert.bind(project.rawValue, at: 1)
                    try insert.bind(topic, at: 2)
                    _ = try insert.step()
                    id = insert.int64(0)
                    try insert.run()
                    topicID = id
                }
                let existing = try connection.statement(
                    "SELECT 1 FROM subscriptions WHERE topic_id = ?1 AND device_id = ?2"
                )
                try existing.bind(id, at: 1)
                try existing.bind(device.rawValue, at: 2)
                if try existing.step() {
                    try existing.run()
                    results.append(.ok)
                    continue
                }
                let count = try connection.statement("SELECT count(*) FROM subscriptions WHERE device_id = ?1")
                try count.bind(device.rawValue, at: 1)
                _ = try count.step()
                let held = count.int64(0)
                try count.run()
                guard held < maxTopics else {
                    results.append(.tooManyTopics)
                    continue
                }
                let insert = try connection.statement(
                    "INSERT INTO subscriptions (topic_id, device_id, added_at) VALUES (?1, ?2, ?3)"
                )
                try insert.bind(id, at: 1)
                try insert.bind(device.rawValue, at: 2)
                try insert.bind(transaction.nowMicros, at: 3)
                try insert.run()
                results.append(.ok)
            }
            // A topic created here for subscriptions that were all refused (too many topics) is not kept.
            if let topicID { try transaction.deleteTopicsWithoutSubscribers([topicID]) }
            return results
        }
    }

    /// See ``PushStore/unsubscribe(tokens:from:project:)``.
    public func unsubscribe(
        tokens: [String],
        from topic: String,
        project: ProjectID
    ) async throws -> [TopicMembershipResult] {
        try await self.writer.write(isolated: true) { transaction in
            let connection = transaction.connection
            let topicID = try transaction.topicID(project: project.rawValue, name: topic)
            var results: [TopicMembershipResult] = []
            results.reserveCapacity(tokens.count)
            for token in tokens {
                switch try Self.lookUp(token: token, project: project, in: connection) {
                case .failure(let result):
                    results.append(result)
                case .success(let device):
                    if let topicID {
                        let delete = try connection.statement(
                            "DELETE FROM subscriptions WHERE topic_id = ?1 AND device_id = ?2"
                        )
                        try delete.bind(topicID, at: 1)
                        try delete.bind(device.rawValue, at: 2)
                        try delete.run()
                    }
                    results.append(.ok)
                }
            }
            if let topicID { try transaction.deleteTopicsWithoutSubscribers([topicID]) }
            return results
        }
    }

    /// See ``PushStore/subscriptions(of:)``.
    public func subscriptions(of device: DeviceID) async throws -> [TopicSubscription] {
        try await self.readers.read { connection throws(StoreError) in
            let select = try connection.statement(
                """
                SELECT t.name, s.added_at FROM subscriptions s JOIN topics t ON t.id = s.topic_id
                WHERE s.device_id = ?1 ORDER BY t.name
                """
            )
            try select.bind(device.rawValue, at: 1)
            var subscriptions: [TopicSubscription] = []
            while try select.step() {
                subscriptions.append(
                    TopicSubscription(topic: select.text(0) ?? "", addedAt: StoreContext.date(micros: select.int64(1)))
                )
            }
            return subscriptions
        }
    }

    /// See ``PushStore/enqueueTopicMessage(_:)``.
    public func enqueueTopicMessage(_ message: NewTopicMessage) async throws -> MessageID {
        try await withCheckedThrowingContinuation { continuation in
            self.enqueueTopicMessage(message) { continuation.resume(with: $0) }
        }
    }

    /// See ``PushStore/enqueueTopicMessage(_:completion:)``: the row in a transaction of its own, `completion` on
    /// the writer thread after the commit.
    public func enqueueTopicMessage(
        _ message: NewTopicMessage, completion: @escaping @Sendable (Result<MessageID, any Error>) -> Void
    ) {
        self.writer.submit(isolated: true, { transaction in
            let exists = try transaction.connection.statement("SELECT 1 FROM projects WHERE id = ?1")
            try exists.bind(message.project.rawValue, at: 1)
            guard try exists.step() else {
                throw StoreError.notFound("no project with id \(message.project)")
            }
            try exists.run()
            return MessageID(rawValue: try transaction.insertTopicMessage(message))
        }, completion: completion)
    }

    private enum TokenLookup {
        case success(DeviceID)
        case failure(TopicMembershipResult)
    }

    private static func lookUp(
        token: String,
        project: ProjectID,
        in connection: SQLiteConnection
    ) throws(StoreError) -> TokenLookup {
        let select = try connection.statement("SELECT id, project_id FROM devices WHERE token = ?1")
        try select.bind(token, at: 1)
        guard try select.step() else { return .failure(.notFound) }
        let device = DeviceID(rawValue: select.int64(0))
        let owner = select.int64(1)
        try select.run()
        return owner == project.rawValue ? .success(device) : .failure(.wrongProject)
    }
}
