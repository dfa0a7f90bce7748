import Logging
@testable import PushRelayServer
import ServiceLifecycle
import Testing
#if canImport(Glibc)
import Glibc
import TestSupport
#endif

@Suite("sd_notify over NOTIFY_SOCKET")
struct SystemdNotifierTests {
    @Test("READY, STATUS, WATCHDOG, RELOADING, STOPPING arrive in order", arguments: [false, true])
    func protocolOrder(abstract: Bool) throws {
        let listener = FakeNotifySocket(abstract: abstract)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": listener.address])
        #expect(notifier.isEnabled)
        try notifier.ready(status: "listening on 127.0.0.1:8080")
        try notifier.status("12 devices\nconnected")
        try notifier.watchdog()
        try notifier.reloading()
        try notifier.stopping()

        #expect(listener.receive() == "READY=1\nSTATUS=listening on 127.0.0.1:8080\n")
        #expect(listener.receive() == "STATUS=12 devices connected\n")
        #expect(listener.receive() == "WATCHDOG=1\n")
        let reloading = listener.receive() ?? ""
        #expect(reloading.hasPrefix("RELOADING=1\nMONOTONIC_USEC="))
        #expect(UInt64(reloading.dropFirst("RELOADING=1\nMONOTONIC_USEC=".count).dropLast()) != nil)
        #expect(listener.receive() == "STOPPING=1\n")
    }

    @Test("without NOTIFY_SOCKET every call is a no-op")
    func disabled() throws {
        let notifier = SystemdNotifier(environment: [:])
        #expect(!notifier.isEnabled)
        try notifier.ready()
        try notifier.stopping()
    }

    @Test("a socket nobody listens on, and a relative path, are errors")
    func errors() {
        #expect(throws: SystemdNotifierError.self) {
            try SystemdNotifier(socketPath: "/tmp/pushrelay-no-such-socket-\(getpid())").ready()
        }
        let relative = #expect(throws: SystemdNotifierError.self) {
            try SystemdNotifier(socketPath: "relative/path").ready()
        }
        #expect(relative?.description.contains("absolute") == true)
    }

    @Test("WATCHDOG_USEC gives the interval unless WATCHDOG_PID names another process")
    func watchdogInterval() {
        let pid = Int(getpid())
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000"], pid: pid) == .seconds(30))
        #expect(
            SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "\(pid)"], pid: pid)
                == .seconds(2)
        )
        #expect(
            SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"], pid: pid)
                == nil
        )
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "0"], pid: pid) == nil)
        #expect(SystemdNotifier.watchdogInterval(environment: [:], pid: pid) == nil)
    }

    @Test("the watchdog service pings WATCHDOG=1 at half the interval until cancelled")
    func watchdogService() async throws {
        let listener = FakeNotifySocket()
        let notifier = SystemdNotifier(socketPath: listener.address, watchdogInterval: .milliseconds(20))
        let service = SystemdWatchdogService(notifier: notifier, logger: Logger(label: "test"))
        #expect(service.pingInterval == .milliseconds(10))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            for _ in 0..<3 {
                #expect(await listener.next() == "WATCHDOG=1\n")
            }
            group.cancelAll()
            try await group.waitForAll()  // returns, does not throw, on cancellation
        }
    }

    @Test("the watchdog service without an interval ends at graceful shutdown")
    func watchdogServiceWithoutInterval() async throws {
        let service = SystemdWatchdogService(notifier: SystemdNotifier(socketPath: nil), logger: Logger(label: "test"))
        #expect(service.pingInterval == nil)
        let group = ServiceGroup(services: [service], logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    @Test("SIGHUP runs the reload action between RELOADING=1 and READY=1")
    func reloadOnSignal() async throws {
        let listener = FakeNotifySocket()
        let notifier = SystemdNotifier(socketPath: listener.address)
        let reloads = ReloadCounter()
        // SIGUSR2 stands in for SIGHUP, so that no other test's process-wide SIGHUP handling is disturbed. It is
        // ignored before the first kill, so that an early signal cannot end the test process.
        signal(SIGUSR2, SIG_IGN)
        let service = ReloadSignalService(notifier: notifier, logger: Logger(label: "test"), signal: SIGUSR2) {
            "reloaded \(await reloads.increment())"
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            // The signal source may not be installed yet when the task starts: resend until the first reload.
            var first: String?
            for _ in 0..<50 where first == nil {
                kill(getpid(), SIGUSR2)
                first = await listener.next(timeoutMilliseconds: 200)
            }
            #expect(first?.hasPrefix("RELOADING=1\n") == true)
            let ready = await listener.next()
            #expect(ready?.hasPrefix("READY=1\nSTATUS=reloaded ") == true)
            group.cancelAll()
            try await group.waitForAll()
        }
        #expect(await reloads.count >= 1)
    }
}

/// Counts reloads across tasks.
private actor ReloadCounter {
    var count = 0
    func increment() -> Int {
        count += 1
        return count
    }
}
