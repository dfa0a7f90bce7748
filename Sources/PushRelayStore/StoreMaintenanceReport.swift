/// What one ``PushStore/purge(limit:)`` run removed (for logs and metrics counters).
public struct PurgeReport: Hashable, Sendable {
    /// Expired messages deleted from device queues.
    public var expiredMessages: Int
    /// Topic messages whose time to live passed before their expansion finished (expansion stopped).
    public var expiredTopicMessages: Int
    /// Rotated server keys deleted after their grace period.
    public var expiredServerKeys: Int

    /// Creates a value.
    public init(expiredMessages: Int = 0, expiredTopicMessages: Int = 0, expiredServerKeys: Int = 0) {
        self.expiredMessages = expiredMessages
        self.expiredTopicMessages = expiredTopicMessages
        self.expiredServerKeys = expiredServerKeys
    }
}

extension PushStore {
    /// Purges in passes of ``PushStore/purge(limit:)`` until a pass deletes fewer than `batch` expired messages, at
    /// most `maxPasses` passes; `passed` sees each pass's report. One pass a `purge_interval` would delete at most
    /// `batch` a round: a backlog of expired messages (short-lived messages to offline devices, at a higher rate than
    /// that) would only grow, in the database and in the queue-depth gauge. Each pass's chunks are write requests of
    /// their own, so sends and acknowledgements commit between them.
    public func purgeCatchingUp(batch: Int, maxPasses: Int, _ passed: (PurgeReport) -> Void) async throws {
        for _ in 0..<max(maxPasses, 1) {
            let report = try await self.purge(limit: batch)
            passed(report)
            if report.expiredMessages < batch || Task.isCancelled { return }
        }
    }
}

/// Gauges of the queues (for `/metrics`).
public struct QueueStatistics: Hashable, Sendable {
    /// Messages stored in device queues, expired-but-unpurged included.
    public var storedMessages: Int
    /// Devices with at least one stored message.
    public var devicesWithMessages: Int
    /// Topic messages whose expansion into device queues has not finished.
    public var topicMessagesExpanding: Int
    /// Registered devices.
    public var devices: Int
    /// Projects.
    public var projects: Int

    /// Creates a value.
    public init(storedMessages: Int, devicesWithMessages: Int, topicMessagesExpanding: Int, devices: Int, projects: Int) {
        self.storedMessages = storedMessages
        self.devicesWithMessages = devicesWithMessages
        self.topicMessagesExpanding = topicMessagesExpanding
        self.devices = devices
        self.projects = projects
    }
}
