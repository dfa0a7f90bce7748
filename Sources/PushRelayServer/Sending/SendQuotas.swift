import NIOConcurrencyHelpers
import NIOCore
import PushRelayCore
import PushRelayStore

/// The message rates a node allows (issue 12, quotas): per device (`device_message_rate`, FCM's
/// `DeviceMessageRateExceeded`) and per topic or condition of a project (`topic_message_rate`,
/// `TopicsMessageRateExceeded`); the HTTP v1 route answers both as `QUOTA_EXCEEDED`. Each is a ``RateBucket``: the
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
    }

    /// Sends allowed per device per minute (0: no quota).
    let devicePerMinute: Int
    /// Topic or condition sends allowed per topic (or condition text) of a project per minute (0: no quota).
    let topicPerMinute: Int
    private let state = NIOLockedValueBox(State())
    private let now: @Sendable () -> UInt64

    /// Quotas of `devicePerMinute` and `topicPerMinute`, on the monotonic clock (or `now`, for tests).
    init(
        devicePerMinute: Int,
        topicPerMinute: Int,
        now: @escaping @Sendable () -> UInt64 = { NIODeadline.now().uptimeNanoseconds }
    ) {
        self.devicePerMinute = devicePerMinute
        self.topicPerMinute = topicPerMinute
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
}
