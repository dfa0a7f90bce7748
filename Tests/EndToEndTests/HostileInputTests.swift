import Foundation
import TestSupport
import Testing

/// Attacks on the application layer against the real daemon, each with a healthy client sending meanwhile
/// (``AttackProbe``): the daemon answers the attack with FCM's error, keeps serving, loses no accepted message,
/// and the test prints the healthy client's latency and the daemon's peak RSS (docs/operations.md, "Hostile input").
@Suite(.serialized) struct HostileInputTests {
    /// The condition that crashed the daemon (200,000 `!`), conditions nested past the bound within the length
    /// limit, and conditions past the length limit, 20 at a time: each is `InvalidParameters`, nothing crashes.
    @Test func hostileConditionsAreRefusedAndTheDaemonKeepsServing() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let probe = try await AttackProbe(daemon: daemon, keys: keys)
        probe.start()

        let attacks: [(name: String, condition: String, reason: String)] = [
            ("200,000 !", String(repeating: "!", count: 200_000) + "'a' in topics", "longer than 8192 bytes"),
            ("8,000 !", String(repeating: "!", count: 8000) + "'a' in topics", "nested deeper than 16 levels"),
            (
                "5,000 (", String(repeating: "(", count: 5000) + "'a' in topics" + String(repeating: ")", count: 5000),
                "longer than 8192 bytes"
            ),
            ("3,000 !(", String(repeating: "!(", count: 3000) + "'a' in topics", "nested deeper than 16 levels"),
            ("100 KB of spaces", String(repeating: " ", count: 100_000) + "'a' in topics", "longer than 8192 bytes"),
        ]
        let rounds = 10
        try await withThrowingTaskGroup(of: (String, Int, String, String).self) { group in
            for _ in 0..<rounds {
                for attack in attacks {
                    group.addTask {
                        let answer = try await daemon.send(
                            #"{"condition": "\#(attack.condition)", "data": {"k": "v"}}"#, serverKey: keys.serverKey)
                        return (attack.name, answer.status, answer.body, attack.reason)
                    }
                }
            }
            for try await (name, status, body, reason) in group {
                #expect(status == 400, "\(name): \(status) \(body.prefix(200))")
                #expect(body.contains("InvalidParameters"), "\(name): \(body.prefix(200))")
                #expect(body.contains(reason), "\(name): \(body.prefix(200))")
            }
        }

        await probe.stop()
        let report = probe.report
        print("hostile conditions (\(attacks.count * rounds) requests): \(report)")
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(daemon.process?.isRunning == true, "the daemon died: \(daemon.log)")
        // Still serving: a legitimate condition is accepted and every accepted probe message arrives.
        let legitimate = try await daemon.send(
            #"{"condition": "'a' in topics && !('b' in topics)", "data": {"k": "v"}}"#, serverKey: keys.serverKey)
        #expect(legitimate.status == 200, "\(legitimate.body)")
        try await probe.expectEveryAcceptedMessageDelivered()
        #expect(try await daemon.terminate() == 0)
    }
}
