import Foundation
import TestSupport
import Testing

/// The real daemon under a fake `$NOTIFY_SOCKET`: READY=1 once it listens, STOPPING=1 on SIGTERM, in that order.
@Suite(.serialized) struct SystemdNotifyTests {
    @Test func readyThenStoppingOverNotifySocket() async throws {
        let socket = FakeNotifySocket()
        let daemon = try Daemon(environment: ["NOTIFY_SOCKET": socket.address])
        try await daemon.start()

        var messages: [String] = []
        while let message = await socket.next(timeoutMilliseconds: 5_000) {
            messages.append(message)
            if message.split(separator: "\n").contains("READY=1") { break }
        }
        let ready = try #require(messages.last, "no READY=1; got \(messages)")
        #expect(ready.split(separator: "\n").contains("READY=1"))
        #expect(!messages.contains { $0.contains("STOPPING=1") })
        // The daemon answers once it said READY.
        let readyz = try await run("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(daemon.baseURL)/readyz"])
        #expect(readyz.stdout == "200")

        daemon.sendTerminate()
        var stopping: [String] = []
        while let message = await socket.next(timeoutMilliseconds: 10_000) {
            stopping.append(message)
            if message.split(separator: "\n").contains("STOPPING=1") { break }
        }
        #expect(stopping.contains { $0.split(separator: "\n").contains("STOPPING=1") }, "after SIGTERM: \(stopping)")
        #expect(!stopping.contains { $0.split(separator: "\n").contains("READY=1") })
        let exit = try #require(try await daemon.waitForExit(), "the daemon did not exit")
        #expect(exit.status == 0)
    }
}
