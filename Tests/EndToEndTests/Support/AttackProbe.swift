import Foundation
import Testing

/// A healthy sender that keeps sending one data message at a time to a few devices while an attack runs, and
/// records each send's latency and every message the daemon accepted, so an attack test can report what a
/// well-behaved client saw and prove that nothing accepted was lost.
///
/// Each device gets at most ``maxPerDevice`` messages (below the queue limit of 100, so none is dropped by
/// policy). Latency is that of a whole `curl` call (process start included): an upper bound, the same for every
/// attack, comparable across runs.
final class AttackProbe: @unchecked Sendable {
    let daemon: Daemon
    let keys: ProjectKeys
    let devices: [DeviceKeys]
    static let maxPerDevice = 90

    private let lock = NSLock()
    private var latencies: [Duration] = []
    private var accepted: [Int: [String]] = [:]
    private var failures: [String] = []
    private var peakRSSKiB = 0
    private var task: Task<Void, Never>?

    init(daemon: Daemon, keys: ProjectKeys, deviceCount: Int = 3) async throws {
        self.daemon = daemon
        self.keys = keys
        self.devices = try await daemon.registerDevices(keys, count: deviceCount)
    }

    /// Starts sending in the background, one message at a time, until ``stop()``.
    func start() {
        task = Task { [self] in
            var sequence = 0
            let clock = ContinuousClock()
            while !Task.isCancelled, sequence < devices.count * Self.maxPerDevice {
                let index = sequence % devices.count
                let body = #"{"to": "\#(devices[index].token)", "data": {"probe": "\#(sequence)"}}"#
                let started = clock.now
                do {
                    let answer = try await daemon.send(body, serverKey: keys.serverKey)
                    let elapsed = clock.now - started
                    let id = try? messageID(ofSendResponse: answer.body)
                    lock.withLock {
                        latencies.append(elapsed)
                        if let id { accepted[index, default: []].append(id) } else { failures.append(answer.body) }
                    }
                } catch {
                    lock.withLock { failures.append("\(error)") }
                }
                sampleRSS()
                sequence += 1
            }
        }
    }

    /// Stops sending and waits for the send in progress.
    func stop() async {
        task?.cancel()
        await task?.value
        sampleRSS()
    }

    /// Records the daemon's peak resident set (`VmHWM`), which the kernel keeps as a high-water mark.
    func sampleRSS() {
        guard let pid = daemon.process?.processIdentifier,
            let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return }
        lock.withLock { peakRSSKiB = max(peakRSSKiB, kib) }
    }

    /// The figures of the run, for the test's output and the operations guide's table.
    struct Report: CustomStringConvertible {
        var sends: Int
        var failures: [String]
        var p50: Duration
        var p99: Duration
        var max: Duration
        var peakRSSMiB: Int

        var description: String {
            "healthy sends \(sends) (failed \(failures.count)), latency p50 \(p50.milliseconds) ms, "
                + "p99 \(p99.milliseconds) ms, max \(max.milliseconds) ms; daemon peak RSS \(peakRSSMiB) MiB"
        }
    }

    var report: Report {
        lock.withLock {
            let sorted = latencies.sorted()
            func percentile(_ p: Double) -> Duration {
                sorted.isEmpty ? .zero : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
            }
            return Report(
                sends: latencies.count, failures: failures, p50: percentile(0.5), p99: percentile(0.99),
                max: sorted.last ?? .zero, peakRSSMiB: peakRSSKiB / 1024)
        }
    }

    /// Stops, prints the run's figures under `label`, and expects what every attack test expects of the healthy
    /// client: no failed send, at least one sent, and every accepted message delivered.
    @discardableResult
    func finish(_ label: String) async throws -> Report {
        await stop()
        let report = self.report
        print("\(label): \(report)")
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(report.sends > 0)
        try await expectEveryAcceptedMessageDelivered()
        return report
    }

    /// Opens each device's stream and waits until every accepted message has arrived: nothing accepted was lost.
    func expectEveryAcceptedMessageDelivered() async throws {
        let accepted = lock.withLock { self.accepted }
        #expect(!accepted.isEmpty, "the healthy client got no send accepted")
        for (index, ids) in accepted {
            let stream = try daemon.openStream(secret: devices[index].secret)
            defer { stream.stop() }
            try await stream.waitFor(timeout: .seconds(60), "\(ids.count) accepted messages on device \(index)") {
                text in ids.allSatisfy { text.contains($0) }
            }
        }
    }
}

extension Duration {
    /// Whole milliseconds.
    var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}
