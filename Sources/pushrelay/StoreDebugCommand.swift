import ArgumentParser
import Foundation
import PushRelayCore
import PushRelayStore

/// `pushrelay store-debug …`: hidden tools for the store's benchmark and crash test. Not for users.
struct StoreDebugCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store-debug",
        abstract: "Store benchmark and crash-test helpers (hidden).",
        shouldDisplay: false,
        subcommands: [StoreBenchCommand.self, StoreCrashWriterCommand.self]
    )
}

/// `pushrelay store-debug bench`: durable single-token enqueues per second through the group-commit writer.
struct StoreBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measures durable single-message enqueues per second (in-process, no HTTP)."
    )

    @Option(help: "Data directory (a fresh temporary one if omitted).")
    var dataDir: String?

    @Option(help: "Devices registered and targeted round-robin.")
    var devices = 10_000

    @Option(help: "Messages enqueued in the measured run.")
    var messages = 200_000

    @Option(help: "Concurrent callers (each awaits its enqueue before the next, like one HTTP request).")
    var concurrency = 512

    @Option(help: "Body size in bytes (the seed scenario's envelope is about 400).")
    var bodySize = 400

    @Option(help: "Subscribers of a topic for the fan-out measurement (0 skips it).")
    var fanOut = 0

    mutating func run() async throws {
        let directory = try self.dataDir ?? Self.temporaryDirectory()
        let store = try SQLiteStore(configuration: SQLiteStore.Configuration(directory: directory))
        let project = try await store.createProject(name: "bench-\(UInt32.random(in: 0...UInt32.max))").project
        var deviceIDs: [DeviceID] = []
        var tokens: [String] = []
        try await withThrowingTaskGroup(of: DeviceRegistration.self) { group in
            var started = 0
            while started < min(self.devices, 256) {
                group.addTask { try await store.registerDevice(project: project.id, app: "bench", platform: "LINUX") }
                started += 1
            }
            while let registration = try await group.next() {
                deviceIDs.append(registration.device.id)
                tokens.append(registration.device.token)
                if started < self.devices {
                    group.addTask { try await store.registerDevice(project: project.id, app: "bench", platform: "LINUX") }
                    started += 1
                }
            }
        }
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: self.bodySize)
        let total = self.messages
        let workers = self.concurrency
        let targets = deviceIDs
        let before = store.groupCommitStatistics
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var index = worker
                    while index < total {
                        let device = targets[index % targets.count]
                        _ = try await store.enqueue([NewMessage(device: device, body: body)])
                        index += workers
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = ContinuousClock.now - start
        let writer = store.groupCommitStatistics
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let statistics = try await store.queueStatistics()
        print(
            String(
                format: "enqueue: %d messages to %d devices, %d concurrent callers, %d-byte bodies: %.2f s, %.0f msg/s",
                total, targets.count, workers, self.bodySize, seconds, Double(total) / seconds
            )
        )
        print("stored messages after run: \(statistics.storedMessages)")
        print(
            "writer: \(writer.transactions) transactions (fsyncs), \(writer.requests) requests, largest group "
                + "\(writer.largestGroup), mean COMMIT \(writer.commitMicros / Int64(max(writer.transactions, 1))) µs, "
                + "writer thread CPU \(writer.writerCPUMicros / 1000) ms"
        )
        let cpuPerRequest = Double(writer.writerCPUMicros - before.writerCPUMicros)
            / Double(max(writer.requests - before.requests, 1))
        print(
            String(
                format: "writer CPU per enqueue: %.1f µs (capacity of one idle core: %.0f enqueues/s)",
                cpuPerRequest, 1e6 / cpuPerRequest
            )
        )
        print(
            "checkpoints: \(writer.backgroundCheckpoints - before.backgroundCheckpoints) by the checkpointer thread, "
                + "\(writer.writerCheckpoints - before.writerCheckpoints) by the writer "
                + "(\(writer.writerCheckpointFrames - before.writerCheckpointFrames) frames); the WAL started over "
                + "\(writer.walRestarts - before.walRestarts) times, \(writer.walPages) pages in it at the end"
        )

        if self.fanOut > 0 {
            try await self.measureFanOut(store: store, project: project.id, tokens: tokens, body: body)
        }
        await store.close()
        if self.dataDir == nil {
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    private func measureFanOut(store: SQLiteStore, project: ProjectID, tokens: [String], body: [UInt8]) async throws {
        var subscribers = Array(tokens.prefix(self.fanOut))
        while subscribers.count < self.fanOut {
            let more = try await store.registerDevice(project: project, app: "bench", platform: "LINUX")
            subscribers.append(more.device.token)
        }
        for chunk in stride(from: 0, to: subscribers.count, by: 1000) {
            let slice = Array(subscribers[chunk..<min(chunk + 1000, subscribers.count)])
            _ = try await store.subscribe(tokens: slice, to: "bench", project: project)
        }
        let counter = Counter()
        let goal = subscribers.count
        let done = AsyncStream<Void>.makeStream()
        store.setCommitObserver { appended in
            if counter.add(appended.count) >= goal {
                done.continuation.yield()
            }
        }
        let start = ContinuousClock.now
        let id = try await store.enqueueTopicMessage(
            NewTopicMessage(project: project, target: .topic("bench"), body: body)
        )
        let accepted = ContinuousClock.now - start
        for await _ in done.stream { break }
        let expanded = ContinuousClock.now - start
        store.setCommitObserver(nil)
        print("fan-out: topic message \(id) to \(goal) subscribers: accepted in \(accepted), in every queue after \(expanded)")
    }

    private static func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushrelay-store-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

/// `pushrelay store-debug crash-writer`: enqueues messages for one device and prints the id of each message as soon
/// as its enqueue returned (one per line, flushed), until killed or done. The crash test kills it with SIGKILL and
/// checks every printed id is in the database.
struct StoreCrashWriterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crash-writer",
        abstract: "Enqueues and prints acknowledged message ids (for the kill -9 test)."
    )

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: "Device id (the store's row id) to enqueue to.")
    var device: Int64

    @Option(help: "Messages to enqueue at most.")
    var count = 100_000

    @Option(help: "Concurrent callers.")
    var concurrency = 16

    mutating func run() async throws {
        // Every acknowledged message must stay: lift the 100-message rule for this one-device test.
        let store = try await self.storeOptions.open(queuePolicy: QueuePolicy(maxPendingNonCollapsible: self.count + 1))
        let device = DeviceID(rawValue: self.device)
        let total = self.count
        let workers = self.concurrency
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var index = worker
                    while index < total {
                        let results = try await store.enqueue([
                            NewMessage(device: device, body: Array("m\(index)".utf8), collapseKey: nil)
                        ])
                        if case .stored(let id) = results[0] {
                            Self.printFlushed("\(id)")
                        }
                        index += workers
                    }
                }
            }
            try await group.waitForAll()
        }
        await store.close()
    }

    private static func printFlushed(_ line: String) {
        var bytes = Array((line + "\n").utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(1, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }
}

/// A counter shared with the commit observer.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    func add(_ count: Int) -> Int {
        self.lock.lock()
        defer { self.lock.unlock() }
        self.value += count
        return self.value
    }
}
