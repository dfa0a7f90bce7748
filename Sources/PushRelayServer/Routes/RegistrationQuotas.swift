import NIOConcurrencyHelpers
import NIOCore
import PushRelayCore
import PushRelayStore

/// The registration rates a node allows (issue 12, quotas): per project (`registration_rate`), since a project's
/// client key ships inside every copy of its app, and per source address (`registration_rate_per_address`), across
/// projects. Each is a ``RateBucket`` in a ``RateTable``: the rate per minute as a burst, refilled at that rate. A
/// rate of 0 means no quota. Per node: with several nodes, each applies the rates to what it accepts.
final class RegistrationQuotas: Sendable {
    private struct State: Sendable {
        var projects = RateTable<ProjectID>()
        /// By IP address, without the port (a client's connections differ only in port).
        var addresses = RateTable<String>()
    }

    /// Registrations allowed per project per minute (0: no quota).
    let perProject: Int
    /// Registrations allowed per source address per minute (0: no quota).
    let perAddress: Int
    private let state = NIOLockedValueBox(State())
    private let now: @Sendable () -> UInt64

    /// Quotas of `perProject` and `perAddress`, on the monotonic clock (or `now`, for tests).
    init(perProject: Int, perAddress: Int, now: @escaping @Sendable () -> UInt64 = { NIODeadline.now().uptimeNanoseconds }) {
        self.perProject = perProject
        self.perAddress = perAddress
        self.now = now
    }

    /// Whether `address` may try a registration now, checked before the client key is (so that guessing keys is
    /// throttled too): `nil` when it may (one is counted), else the seconds until it may.
    func admit(address: SocketAddress?) -> Int? {
        guard perAddress > 0, let key = address?.ipAddress else { return nil }
        let now = self.now()
        let perMinute = perAddress
        return state.withLockedValue { $0.addresses.take(key, perMinute: perMinute, now: now) }
    }

    /// Whether `project` may register one more device now: `nil` when it may (one is counted), else the seconds
    /// until it may.
    func admit(project: ProjectID) -> Int? {
        guard perProject > 0 else { return nil }
        let now = self.now()
        let perMinute = perProject
        return state.withLockedValue { $0.projects.take(project, perMinute: perMinute, now: now) }
    }
}
