import NIOCore
import PushRelayCore
import PushRelayStore

/// The registration rates a node allows (issue 12, quotas): per project (`registration_rate`), since a project's
/// client key ships inside every copy of its app, and per source address (`registration_rate_per_address`), across
/// projects. Each is a ``RateLimiter``: the rate per minute as a burst, refilled at that rate. A
/// rate of 0 means no quota. Per node: with several nodes, each applies the rates to what it accepts.
final class RegistrationQuotas: Sendable {
    private let projects: RateLimiter<ProjectID>
    /// By IP address, without the port (a client's connections differ only in port).
    private let addresses: RateLimiter<String>

    /// Quotas of `perProject` and `perAddress`, on the monotonic clock (or `now`, for tests).
    init(perProject: Int, perAddress: Int, now: @escaping @Sendable () -> UInt64 = { NIODeadline.now().uptimeNanoseconds }) {
        self.projects = RateLimiter(perMinute: perProject, now: now)
        self.addresses = RateLimiter(perMinute: perAddress, now: now)
    }

    /// Whether `address` may try a registration now, checked before the client key is (so that guessing keys is
    /// throttled too): `nil` when it may (one is counted), else the seconds until it may.
    func admit(address: SocketAddress?) -> Int? {
        guard addresses.perMinute > 0, let key = address?.ipAddress else { return nil }
        return addresses.admit(key)
    }

    /// Whether `project` may register one more device now: `nil` when it may (one is counted), else the seconds
    /// until it may.
    func admit(project: ProjectID) -> Int? {
        projects.admit(project)
    }
}
