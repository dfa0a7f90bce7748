import NIOConcurrencyHelpers
import NIOCore
import PushRelayCore
import PushRelayStore

/// The message rates a node allows (issue 12, quotas): per device (`device_message_rate`, FCM's
/// `DeviceMessageRateExceeded`) and per topic or condition of a project (`topic_message_rate`,
/// `TopicsMessageRateExceeded`), and per project over all its sends (`project_message_rate`, FCM's project quota:
/// the whole send answers `429 QuotaExceeded`); the HTTP v1 route answers each as `QUOTA_EXCEEDED`. Each is a ``RateBucket``: the
/// rate per minute as a burst, refilled at that rate. A rate of 0 means no quota.
///
/// Shared by every event loop's sends: one lock, held for a dictionary look-up and a bucket update (``RateTable``).
/// Per node: with several nodes, each applies the rates to what it accepts.
final class SendQuotas: Sendable {
    /// A topic or condition of one project.
    private struct TopicKey: Hashable, Sendable {
        var project: ProjectID
        var target: NewTopicMessage.Target
    }

    private struct State: Sendable {
        var devices = RateTable<DeviceID>()
        var topics = RateTable<TopicKey>()
        var projects = RateTable<ProjectID>()
    }

    /// Sends allowed per device per minute (0: no quota).
    let devicePerMinute: Int
    /// Topic or condition sends allowed per topic (or condition text) of a project per minute (0: no quota).
    let topicPerMinute: Int
    /// Messages (one per recipient; one for a topic or condition) a project may send per minute (0: no quota).
    let projectPerMinute: Int
    private let state = NIOLockedValueBox(State())
    private let now: @Sendable () -> UInt64

    /// Quotas of `devicePerMinute` and `topicPerMinute`, on the monotonic clock (or `now`, for tests).
    init(
        devicePerMinute: Int,
        topicPerMinute: Int,
        projectPerMinute: Int = 0,
        now: @escaping @Sendable () -> UInt64 = { NIODeadline.now().uptimeNanoseconds }
    ) {
        self.devicePerMinute = devicePerMinute
        self.topicPerMinute = topicPerMinute
        self.projectPerMinute = projectPerMinute
        self.now = now
    }

    /// Devices with a bucket in the table (test hook).
    var trackedDevices: Int { state.withLockedValue { $0.devices.buckets.count } }

    /// Which of `devices` may get one more message now (each allowed one is counted), in order.
    func admit(devices: [DeviceID]) -> [Bool] {
        guard devicePerMinute > 0, !devices.isEmpty else { return Array(repeating: true, count: devices.count) }
        let now = self.now()
        let perMinute = devicePerMinute
        return state.withLockedValue { state in
            devices.map { state.devices.take($0, perMinute: perMinute, now: now) == nil }
        }
    }

    /// Whether one more message to `target` of `project` may be accepted now (counted when it may).
    func admit(topic target: NewTopicMessage.Target, project: ProjectID) -> Bool {
        guard topicPerMinute > 0 else { return true }
        let now = self.now()
        let perMinute = topicPerMinute
        let key = TopicKey(project: project, target: target)
        return state.withLockedValue { $0.topics.take(key, perMinute: perMinute, now: now) == nil }
    }

    /// Whether `project` may send `count` more messages now: `nil` when it may (they are counted), else the seconds
    /// until the bucket holds one again (a send larger than the whole burst is refused outright).
    func admit(project: ProjectID, count: Int) -> Int? {
        guard projectPerMinute > 0 else { return nil }
        let now = self.now()
        let perMinute = projectPerMinute
        return state.withLockedValue { $0.projects.take(project, count: count, perMinute: perMinute, now: now) }
    }
}

/// A send refused whole because its project is past `project_message_rate`; `retryAfterSeconds` for `Retry-After`.
struct ProjectQuotaExceeded: Error {
    let retryAfterSeconds: Int
}
