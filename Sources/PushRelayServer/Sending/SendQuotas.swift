import NIOCore
import PushRelayCore
import PushRelayStore

/// The message rates a node allows (issue 12, quotas): per device (`device_message_rate`, FCM's
/// `DeviceMessageRateExceeded`) and per topic or condition of a project (`topic_message_rate`,
/// `TopicsMessageRateExceeded`), and per project over all its sends (`project_message_rate`, FCM's project quota:
/// the whole send answers `429 QuotaExceeded`); the HTTP v1 route answers each as `QUOTA_EXCEEDED`. Each is a ``RateBucket``: the
/// rate per minute as a burst, refilled at that rate. A rate of 0 means no quota.
///
/// Each is a ``RateLimiter``. Per node: with several nodes, each applies the rates to what it accepts.
final class SendQuotas: Sendable {
    /// A topic or condition of one project.
    private struct TopicKey: Hashable, Sendable {
        var project: ProjectID
        var target: NewTopicMessage.Target
    }

    private let devices: RateLimiter<DeviceID>
    private let topics: RateLimiter<TopicKey>
    private let projects: RateLimiter<ProjectID>

    /// Sends allowed per device per minute (0: no quota).
    var devicePerMinute: Int { devices.perMinute }

    /// Quotas of `devicePerMinute`, `topicPerMinute` (per topic or condition text of a project) and
    /// `projectPerMinute` (messages: one per recipient, one for a topic or condition), on the monotonic clock (or
    /// `now`, for tests).
    init(
        devicePerMinute: Int,
        topicPerMinute: Int,
        projectPerMinute: Int = 0,
        now: @escaping @Sendable () -> UInt64 = { NIODeadline.now().uptimeNanoseconds }
    ) {
        self.devices = RateLimiter(perMinute: devicePerMinute, now: now)
        self.topics = RateLimiter(perMinute: topicPerMinute, now: now)
        self.projects = RateLimiter(perMinute: projectPerMinute, now: now)
    }

    /// The `Retry-After` of a device or topic past its rate (HTTP v1's `QUOTA_EXCEEDED`): the time one message takes
    /// to refill, in whole seconds — a refused bucket holds less than one, so it holds one again within this.
    func retryAfterSeconds(for error: FCMError.Code) -> Int? {
        let perMinute: Int
        switch error {
        case .deviceMessageRateExceeded: perMinute = devices.perMinute
        case .topicsMessageRateExceeded: perMinute = topics.perMinute
        default: return nil
        }
        guard perMinute > 0 else { return nil }
        return max(1, (60 + perMinute - 1) / perMinute)
    }

    /// Devices with a bucket in the table (test hook).
    var trackedDevices: Int { devices.tracked }

    /// Which of `devices` may get one more message now (each allowed one is counted), in order.
    func admit(devices ids: [DeviceID]) -> [Bool] {
        devices.admit(ids)
    }

    /// Whether one more message to `target` of `project` may be accepted now (counted when it may).
    func admit(topic target: NewTopicMessage.Target, project: ProjectID) -> Bool {
        topics.admit(TopicKey(project: project, target: target)) == nil
    }

    /// Whether `project` may send `count` more messages now: `nil` when it may (they are counted), else the seconds
    /// until the bucket holds them (a count above the whole burst waits for a full bucket).
    func admit(project: ProjectID, count: Int) -> Int? {
        projects.admit(project, count: count)
    }
}

/// A send refused whole because its project is past `project_message_rate`; `retryAfterSeconds` for `Retry-After`.
struct ProjectQuotaExceeded: Error {
    let retryAfterSeconds: Int
}
