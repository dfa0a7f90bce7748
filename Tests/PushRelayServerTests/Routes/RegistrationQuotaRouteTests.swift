import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import PushRelayStore
import Testing

@testable import PushRelayServer

/// Registration quotas (`registration_rate`, `registration_rate_per_address`) in process: past a rate
/// `POST /v1/register` answers `429 RESOURCE_EXHAUSTED` with `Retry-After` and registers nothing; the per-address
/// rate counts attempts with a wrong key too; other projects and addresses keep their own rates.
@Suite("Routes: registration quotas")
struct RegistrationQuotaRouteTests {
    private static func relay(perProject: Int, perAddress: Int) throws -> RelayHarness {
        var options = RelayApplication.Options()
        options.registrationRate = perProject
        options.registrationRatePerAddress = perAddress
        return try RelayHarness(options: options)
    }

    private static func register(
        _ relay: RelayHarness, _ project: ProjectCredentials, key: String? = nil, from address: String
    ) async throws -> RelayHarness.Answer {
        try await relay.request(
            .post, "/v1/register",
            headers: [.authorization: "key=\(key ?? project.clientKey)", .contentType: "application/json"],
            body: #"{"project":"\#(project.project.name)","app":"br.com.siecola.shop","platform":"android"}"#,
            from: try SocketAddress(ipAddress: address, port: 40_000 + Int.random(in: 0..<20_000)))
    }

    private static func deviceCount(_ relay: RelayHarness) async throws -> Int {
        try await relay.store.queueStatistics().devices
    }

    @Test("a project past registration_rate gets 429 RESOURCE_EXHAUSTED with Retry-After; nothing is registered; another project is not affected")
    func projectRate() async throws {
        let relay = try Self.relay(perProject: 3, perAddress: 0)
        let shop = try await relay.createProject("shop")
        let news = try await relay.createProject("news")
        for n in 0..<3 {
            let answer = try await Self.register(relay, shop, from: "192.0.2.\(n + 1)")
            #expect(answer.status == 200, "\(answer.text)")
        }
        let refused = try await Self.register(relay, shop, from: "192.0.2.9")
        #expect(refused.status == 429, "\(refused.text)")
        #expect(try refused.json()["error"] as? String == "RESOURCE_EXHAUSTED", "\(refused.text)")
        // 3 per minute: one more in 20 s.
        let retryAfter = try #require(refused.headers[.retryAfter].flatMap { Int($0) }, "\(refused.headers)")
        #expect((1...20).contains(retryAfter), "Retry-After: \(retryAfter)")
        #expect(try await Self.deviceCount(relay) == 3)
        let other = try await Self.register(relay, news, from: "192.0.2.9")
        #expect(other.status == 200, "\(other.text)")
        await relay.close()
    }

    @Test("an address past registration_rate_per_address gets 429, wrong keys counted too; other addresses (v4 and v6) register")
    func addressRate() async throws {
        let relay = try Self.relay(perProject: 0, perAddress: 4)
        let shop = try await relay.createProject("shop")
        // Guessing keys spends the address's rate: two wrong keys, then two registrations.
        for _ in 0..<2 {
            let wrong = try await Self.register(relay, shop, key: "not-the-key", from: "198.51.100.7")
            #expect(wrong.status == 401, "\(wrong.text)")
        }
        for _ in 0..<2 {
            #expect(try await Self.register(relay, shop, from: "198.51.100.7").status == 200)
        }
        let refused = try await Self.register(relay, shop, from: "198.51.100.7")
        #expect(refused.status == 429, "\(refused.text)")
        #expect(refused.headers[.retryAfter] != nil)
        #expect(try refused.json()["message"] as? String == "too many registrations from this address; retry later")
        #expect(try await Self.deviceCount(relay) == 2)
        // The port does not matter: a new connection from the same address is the same address.
        #expect(try await Self.register(relay, shop, from: "198.51.100.7").status == 429)
        #expect(try await Self.register(relay, shop, from: "198.51.100.8").status == 200)
        #expect(try await Self.register(relay, shop, from: "2001:db8::1").status == 200)
        #expect(try await Self.deviceCount(relay) == 4)
        await relay.close()
    }

    @Test("max_devices_per_project: past it 429 RESOURCE_EXHAUSTED without Retry-After; unregistering makes room")
    func deviceCap() async throws {
        var options = RelayApplication.Options()
        options.maxDevicesPerProject = 2
        let relay = try RelayHarness(options: options)
        let shop = try await relay.createProject("shop")
        let first = try await relay.registerDevice(shop)
        _ = try await relay.registerDevice(shop)
        let refused = try await Self.register(relay, shop, from: "192.0.2.1")
        #expect(refused.status == 429, "\(refused.text)")
        #expect(try refused.json()["error"] as? String == "RESOURCE_EXHAUSTED")
        #expect(try refused.json()["message"] as? String == "project shop has 2 devices, its max_devices_per_project")
        #expect(refused.headers[.retryAfter] == nil, "waiting does not help")
        #expect(try await Self.deviceCount(relay) == 2)
        let unregistered = try await relay.request(.delete, "/v1/register", headers: [.authorization: "Bearer \(first.secret)"])
        #expect(unregistered.status == 200)
        #expect(try await Self.register(relay, shop, from: "192.0.2.1").status == 200)
        await relay.close()
    }

    @Test("a rate of 0 is no quota")
    func zeroIsNoQuota() async throws {
        let relay = try Self.relay(perProject: 0, perAddress: 0)
        let shop = try await relay.createProject("shop")
        for _ in 0..<20 {
            #expect(try await Self.register(relay, shop, from: "203.0.113.5").status == 200)
        }
        await relay.close()
    }

    @Test("the quota refills at its rate: Retry-After seconds later one more is admitted")
    func refill() {
        let clock = ManualClock()
        let quotas = RegistrationQuotas(perProject: 2, perAddress: 0, now: { clock.now })
        let project = ProjectID(rawValue: 1)
        #expect(quotas.admit(project: project) == nil)
        #expect(quotas.admit(project: project) == nil)
        let wait = quotas.admit(project: project)
        #expect(wait == 30, "2 per minute: one every 30 s")
        clock.advance(seconds: 29)
        #expect(quotas.admit(project: project) == 1)
        clock.advance(seconds: 1)
        #expect(quotas.admit(project: project) == nil)
    }

    final class ManualClock: Sendable {
        private let nanoseconds = NIOLockedValueBox<UInt64>(1_000_000_000)
        var now: UInt64 { nanoseconds.withLockedValue { $0 } }
        func advance(seconds: UInt64) { nanoseconds.withLockedValue { $0 += seconds * 1_000_000_000 } }
    }
}
