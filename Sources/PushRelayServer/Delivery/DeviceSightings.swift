import NIOConcurrencyHelpers
import PushRelayStore

/// The devices seen (a stream opened, an acknowledgement) since the relay last recorded them: the relay's purge loop
/// takes them every `purge_interval` and writes their `last_seen_at` in batches, so that `device_expiry` removes only
/// devices that are gone, without a store write per stream or acknowledgement.
final class DeviceSightings: Sendable {
    private let pending = NIOLockedValueBox(Set<DeviceID>())

    /// Notes that `device` was seen now.
    func saw(_ device: DeviceID) {
        _ = pending.withLockedValue { $0.insert(device) }
    }

    /// The devices seen since the last call, forgotten here.
    func take() -> [DeviceID] {
        pending.withLockedValue { pending in
            defer { pending.removeAll(keepingCapacity: false) }
            return Array(pending)
        }
    }
}
