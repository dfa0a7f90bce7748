import Foundation
import PushRelayCore
import Testing
@testable import PushRelayStore

/// The fan-out at scale, beyond `TopicStoreTests.largeFanOutSurvivesRestart`: the send commits one row and no copy,
/// each step copies at most one batch, and the snapshot holds while the expansion runs across a restart.
@Suite("Store: topic fan-out at scale")
struct TopicFanOutScaleTests {
    @Test("20,000 subscribers: accepted without copies, one batch per step, snapshot kept across a restart", arguments: StoreKind.allCases)
    func snapshotHoldsDuringALongExpansion(kind: StoreKind) async throws {
        let subscribers = 20_000
        let batch = 1000
        try await withTemporaryDirectory { directory in
            let fixture = try await withStore(
                kind,
                in: directory,
                configure: {
                    $0.automaticFanOut = false
                    $0.fanOutBatchSize = batch
                }
            ) { store in
                let project = try await store.createProject(name: "big").project
                var devices: [Device] = []
                try await withThrowingTaskGroup(of: [Device].self) { group in
                    for _ in 0..<20 {
                        group.addTask {
                            var mine: [Device] = []
                            for _ in 0..<(subscribers / 20) {
                                mine.append(
                                    try await store.registerDevice(project: project.id, app: "a", platform: "IOS").device)
                            }
                            return mine
                        }
                    }
                    for try await chunk in group {
                        devices += chunk
                    }
                }
                devices.sort { $0.id.rawValue < $1.id.rawValue }
                for start in stride(from: 0, to: devices.count, by: 1000) {
                    let tokens = devices[start..<(start + 1000)].map(\.token)
                    #expect(try await store.subscribe(tokens: tokens, to: "all", project: project.id).allSatisfy { $0 == .ok })
                }

                // The send: one committed topic message, no device copy yet.
                _ = try await store.enqueueTopicMessage(
                    NewTopicMessage(project: project.id, target: .topic("all"), body: [7]))
                var statistics = try await store.queueStatistics()
                #expect(statistics.storedMessages == 0)
                #expect(statistics.topicMessagesExpanding == 1)

                // Each step copies at most one batch (the memory bound), in device-id order.
                for step in 1...5 {
                    #expect(try await store.expandOneFanOutBatch())
                    #expect(try await store.queueStatistics().storedMessages == step * batch)
                }

                // While it expands: a new device subscribes (after the snapshot), one not yet reached unsubscribes,
                // one already reached unsubscribes (its copy stays).
                let late = try await store.registerDevice(project: project.id, app: "a", platform: "IOS").device
                #expect(try await store.subscribe(tokens: [late.token], to: "all", project: project.id) == [.ok])
                let notYetReached = devices[15_000]
                let reached = devices[10]
                #expect(
                    try await store.unsubscribe(tokens: [notYetReached.token, reached.token], from: "all", project: project.id)
                        == [.ok, .ok])
                statistics = try await store.queueStatistics()
                #expect(statistics.topicMessagesExpanding == 1)
                return (project: project, devices: devices, late: late, notYetReached: notYetReached, reached: reached)
            }

            // Restart with the automatic fan-out: it resumes after the five committed batches.
            try await withStore(kind, in: directory) { store in
                try await waitForFanOut(store)
                let statistics = try await store.queueStatistics()
                #expect(statistics.storedMessages == subscribers - 1)
                #expect(statistics.devicesWithMessages == subscribers - 1)
                #expect(try await store.pendingMessages(for: fixture.late.id, after: nil, limit: 10).isEmpty)
                #expect(try await store.pendingMessages(for: fixture.notYetReached.id, after: nil, limit: 10).isEmpty)
                #expect(try await store.pendingMessages(for: fixture.reached.id, after: nil, limit: 10).map(\.body) == [[7]])
                for device in fixture.devices.shuffled().prefix(50) where device.id != fixture.notYetReached.id {
                    #expect(try await store.pendingMessages(for: device.id, after: nil, limit: 10).map(\.body) == [[7]])
                }
                _ = fixture.project
            }
        }
    }
}
