import Logging
import NIOCore
import PushRelayHTTP
import NIOConcurrencyHelpers
import ServiceLifecycle
import TestSupport
import Testing
@testable import PushRelayServer

/// A service that records when it starts and when it has stopped after the graceful shutdown.
private struct FakeService: Service {
    let name: String
    let events: NIOLockedValueBox<[String]>
    var ignoresShutdown = false

    func run() async throws {
        events.withLockedValue { $0.append("start \(name)") }
        if ignoresShutdown {
            // Simulates a drain that does not finish: only cancellation ends it.
            try? await Task.sleep(for: .seconds(3600))
            events.withLockedValue { $0.append("cancelled \(name)") }
            return
        }
        try? await gracefulShutdown()
        events.withLockedValue { $0.append("stop \(name)") }
    }
}

@Suite("Service group: drain order and timeout")
struct RelayServiceGroupTests {
    private func configuration(drain: Duration) -> PushRelayConfiguration {
        var configuration = PushRelayConfiguration()
        configuration.shutdownDrainTimeout = drain
        return configuration
    }

    @Test("the transport gets the timeouts whole, fractions of a second included, and the connection limits")
    func serverConfigurationFromSettings() {
        var configuration = PushRelayConfiguration()
        configuration.idleTimeout = .milliseconds(1500)
        configuration.shutdownDrainTimeout = .milliseconds(500)
        configuration.requestTimeout = .milliseconds(2250)
        configuration.maxConnections = 77
        configuration.maxConnectionsPerAddress = 0
        let server = RelayService.serverConfiguration(configuration)
        #expect(server.idleTimeout == .milliseconds(1500))
        #expect(server.drainTimeout == .milliseconds(500))
        #expect(server.requestTimeout == .milliseconds(2250))
        #expect(server.maxConnections == 77)
        #expect(server.maxConnectionsPerAddress == nil, "0 is no per-address limit")
    }

    @Test("graceful shutdown stops services in reverse order; the watchdog pings while they run")
    func reverseOrder() async throws {
        let events = NIOLockedValueBox<[String]>([])
        let listener = FakeNotifySocket()
        let watchdog = SystemdWatchdogService(
            notifier: SystemdNotifier(socketPath: listener.address, watchdogInterval: .milliseconds(20)),
            logger: Logger(label: "test")
        )
        let group = RelayServiceGroup.make(
            services: [FakeService(name: "store", events: events), FakeService(name: "listeners", events: events)],
            watchdog: watchdog,
            configuration: configuration(drain: .seconds(30)),
            logger: Logger(label: "test")
        )
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            #expect(await listener.next() == "WATCHDOG=1\n")
            while events.withLockedValue({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(5)) }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        // The group starts its services concurrently (in no set order); it stops them in reverse order.
        let seen = events.withLockedValue { $0 }
        #expect(Set(seen.prefix(2)) == ["start store", "start listeners"], "\(seen)")
        #expect(Array(seen.dropFirst(2)) == ["stop listeners", "stop store"], "\(seen)")
    }

    @Test("a drain that does not finish is cancelled after shutdown_drain_timeout and the close grace")
    func drainTimeout() async throws {
        let events = NIOLockedValueBox<[String]>([])
        let group = RelayServiceGroup.make(
            services: [FakeService(name: "stuck", events: events, ignoresShutdown: true)],
            watchdog: nil,
            configuration: configuration(drain: .milliseconds(100)),
            closeGrace: .milliseconds(100),
            logger: Logger(label: "test")
        )
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try? await group.run() }
            while events.withLockedValue({ $0.count }) < 1 { try await Task.sleep(for: .milliseconds(5)) }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(events.withLockedValue { $0 } == ["start stuck", "cancelled stuck"])
    }
}
