import Foundation
import PushRelayCore
import TestSupport
import Testing
@testable import PushRelayStore

/// A stand-in for the core's condition parser: understands `'a' in topics && 'b' in topics` and
/// `'a' in topics || 'b' in topics` (one operator kind per condition).
enum FakeConditionCompiler {
    static let compile: @Sendable (String) -> TopicConditionMatcher? = { text in
        let isAnd = text.contains("&&")
        let parts = text.components(separatedBy: isAnd ? "&&" : "||")
        var topics: [String] = []
        for part in parts {
            let trimmed = part.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("'"), trimmed.hasSuffix("' in topics") else { return nil }
            topics.append(String(trimmed.dropFirst().dropLast("' in topics".count)))
        }
        let names = topics
        return TopicConditionMatcher(topics: names) { subscribed in
            isAnd ? names.allSatisfy(subscribed.contains) : names.contains(where: subscribed.contains)
        }
    }
}

@Suite("Store: topics")
struct TopicStoreTests {
    @Test("subscribe, per-token results, subscriptions with dates, unsubscribe", arguments: StoreKind.allCases)
    func subscribeAndUnsubscribe(kind: StoreKind) async throws {
        let clock = FakeClock()
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory, clock: clock) { store in
                let fixture = try await makeFixture(store)
                let stranger = try await makeFixture(store, name: "other")
                let token = fixture.registration.device.token
                let tokens = [token, "unknown", stranger.registration.device.token]
                #expect(try await store.subscribe(tokens: tokens, to: "news", project: fixture.project) == [.ok, .notFound, .wrongProject])
                clock.advance(by: 86_400)
                #expect(try await store.subscribe(tokens: [token], to: "sport", project: fixture.project) == [.ok])
                #expect(try await store.subscribe(tokens: [token], to: "news", project: fixture.project) == [.ok])
                let subscriptions = try await store.subscriptions(of: fixture.device)
                #expect(subscriptions.map(\.topic) == ["news", "sport"])
                #expect(subscriptions[1].addedAt.timeIntervalSince(subscriptions[0].addedAt) == 86_400)
                #expect(try await store.subscriptions(of: stranger.device).isEmpty)
                #expect(try await store.unsubscribe(tokens: tokens, from: "news", project: fixture.project) == [.ok, .notFound, .wrongProject])
                #expect(try await store.unsubscribe(tokens: [token], from: "never", project: fixture.project) == [.ok])
                #expect(try await store.subscriptions(of: fixture.device).map(\.topic) == ["sport"])
            }
        }
    }

    @Test("a device holds at most maxTopicsPerDevice topics", arguments: StoreKind.allCases)
    func tooManyTopics(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory, configure: { $0.maxTopicsPerDevice = 2 }) { store in
                let fixture = try await makeFixture(store)
                let token = fixture.registration.device.token
                for topic in ["a", "b"] {
                    #expect(try await store.subscribe(tokens: [token], to: topic, project: fixture.project) == [.ok])
                }
                #expect(try await store.subscribe(tokens: [token], to: "c", project: fixture.project) == [.tooManyTopics])
                #expect(try await store.subscribe(tokens: [token], to: "a", project: fixture.project) == [.ok])
            }
        }
    }

    /// Audit-q: every topic name ever subscribed kept its row, so a device could grow the store without bound by
    /// subscribing to new names and unsubscribing.
    @Test("a topic row lives as long as a subscription to it", arguments: StoreKind.allCases)
    func topicRowsGoWithTheirLastSubscription(kind: StoreKind) async throws {
        let clock = FakeClock()
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory, clock: clock, configure: { $0.maxTopicsPerDevice = 2 }) { store in
                let fixture = try await makeFixture(store)
                let other = try await store.registerDevice(project: fixture.project, app: "com.shop", platform: "IOS")
                let token = fixture.registration.device.token
                func topics() async throws -> [String] { try await topicNames(kind, directory) }

                for n in 0..<50 {
                    #expect(try await store.subscribe(tokens: [token], to: "churn\(n)", project: fixture.project) == [.ok])
                    #expect(try await store.unsubscribe(tokens: [token], from: "churn\(n)", project: fixture.project) == [.ok])
                }
                #expect(try await topics() == [])

                // Two subscribers: the row stays until the second goes.
                for device in [token, other.device.token] {
                    #expect(try await store.subscribe(tokens: [device], to: "news", project: fixture.project) == [.ok])
                }
                #expect(try await store.unsubscribe(tokens: [token], from: "news", project: fixture.project) == [.ok])
                #expect(try await topics() == ["news"])
                #expect(try await store.unsubscribe(tokens: [other.device.token], from: "news", project: fixture.project) == [.ok])
                #expect(try await topics() == [])

                // A refused subscription (too many topics) creates nothing.
                for topic in ["a", "b"] {
                    #expect(try await store.subscribe(tokens: [token], to: topic, project: fixture.project) == [.ok])
                }
                #expect(try await store.subscribe(tokens: [token], to: "c", project: fixture.project) == [.tooManyTopics])
                #expect(try await topics() == ["a", "b"])

                // Removing a device removes the topics only it subscribed to.
                #expect(try await store.subscribe(tokens: [other.device.token], to: "a", project: fixture.project) == [.ok])
                #expect(try await store.unregisterDevice(secret: fixture.registration.secret) == fixture.registration.device)
                #expect(try await topics() == ["a"])
                // And so does device expiry.
                clock.advance(by: 7_200)
                #expect(try await store.expireDevices(unseenFor: .seconds(3600), limit: 100) == 1)
                #expect(try await topics() == [])
            }
        }
    }

    /// Device expiry skips a topic whose row another transaction holds (waiting could deadlock); that topic then had
    /// no later change to delete its row. The next purge checks it again.
    @Test("PostgreSQL: a topic that device expiry had to skip goes with the next purge once nobody subscribes")
    func topicSkippedByExpiryGoesWithTheNextPurge() async throws {
        let clock = FakeClock()
        try await withTemporaryDirectory { directory in
            try await withStore(.postgres, in: directory, clock: clock) { store in
                let fixture = try await makeFixture(store)
                let token = fixture.registration.device.token
                #expect(try await store.subscribe(tokens: [token], to: "held", project: fixture.project) == [.ok])
                let holder = try await holdingSession(
                    "BEGIN; SELECT id FROM topics WHERE name = 'held' FOR UPDATE;", name: "topic_holder", in: directory)

                clock.advance(by: 7_200)
                #expect(try await store.expireDevices(unseenFor: .seconds(3600), limit: 100) == 1)
                #expect(try await topicNames(.postgres, directory) == ["held"], "skipped: its row was held")
                _ = try await store.purge(limit: 1_000)
                #expect(try await topicNames(.postgres, directory) == ["held"], "still held: left for the next purge")

                try holder.send("ROLLBACK;")
                _ = await holder.finish()
                _ = try await store.purge(limit: 1_000)
                #expect(try await topicNames(.postgres, directory) == [])
                let postgresStore = try #require(store as? PostgresStore)
                #expect(postgresStore.context.skippedTopics.count == 0)

                // A skipped topic whose row another path deletes before the purge leaves the set too (it does
                // not stay there, tried at every purge).
                let second = try await store.registerDevice(project: fixture.project, app: "com.shop", platform: "IOS")
                #expect(try await store.subscribe(tokens: [second.device.token], to: "gone", project: fixture.project) == [.ok])
                let holder2 = try await holdingSession(
                    "BEGIN; SELECT id FROM topics WHERE name = 'gone' FOR UPDATE;", name: "topic_holder2", in: directory)
                clock.advance(by: 7_200)
                let third = try await store.registerDevice(project: fixture.project, app: "com.shop", platform: "IOS")
                #expect(try await store.expireDevices(unseenFor: .seconds(3600), limit: 100) == 1)
                #expect(postgresStore.context.skippedTopics.count == 1)
                try holder2.send("ROLLBACK;")
                _ = await holder2.finish()
                #expect(try await store.subscribe(tokens: [third.device.token], to: "gone", project: fixture.project) == [.ok])
                #expect(try await store.unsubscribe(tokens: [third.device.token], from: "gone", project: fixture.project) == [.ok])
                #expect(try await topicNames(.postgres, directory) == [])
                _ = try await store.purge(limit: 1_000)
                #expect(postgresStore.context.skippedTopics.count == 0)
            }
        }
    }

    /// Audit-t: two nodes removing a topic's last two subscriptions at once left its row about once in 16 rounds
    /// (each checked for subscribers before the other's removal committed).
    @Test("PostgreSQL: two nodes unsubscribing a topic's last two subscribers at once leave no row")
    func concurrentLastUnsubscribesOnTwoNodes() async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(.postgres, in: directory) { first in
                let second = try await openStore(.postgres, in: directory)
                defer { Task { await second.close() } }
                let fixture = try await makeFixture(first)
                let other = try await first.registerDevice(project: fixture.project, app: "com.shop", platform: "IOS")
                let tokens = [fixture.registration.device.token, other.device.token]
                for round in 0..<100 {
                    let topic = "race\(round)"
                    #expect(try await first.subscribe(tokens: tokens, to: topic, project: fixture.project) == [.ok, .ok])
                    async let one = first.unsubscribe(tokens: [tokens[0]], from: topic, project: fixture.project)
                    async let two = second.unsubscribe(tokens: [tokens[1]], from: topic, project: fixture.project)
                    #expect(try await [one, two] == [[.ok], [.ok]])
                }
                #expect(try await topicNames(.postgres, directory) == [])
            }
        }
    }

    @Test("a topic message reaches the subscribers at send time, not later ones, not other projects", arguments: StoreKind.allCases)
    func topicFanOut(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                let second = try await store.registerDevice(project: fixture.project, app: "a", platform: "IOS")
                let late = try await store.registerDevice(project: fixture.project, app: "a", platform: "IOS")
                let stranger = try await makeFixture(store, name: "other")
                _ = try await store.subscribe(
                    tokens: [fixture.registration.device.token, second.device.token], to: "news", project: fixture.project
                )
                _ = try await store.subscribe(tokens: [stranger.registration.device.token], to: "news", project: stranger.project)
                store.suspendWriter()  // the late subscription and the send sit in one queue; the send goes first
                async let id = store.enqueueTopicMessage(
                    NewTopicMessage(project: fixture.project, target: .topic("news"), body: [UInt8](text: "hello"), collapseKey: "n")
                )
                #expect(await waitUntilQueued(store, 1))
                async let subscribed = store.subscribe(tokens: [late.device.token], to: "news", project: fixture.project)
                #expect(await waitUntilQueued(store, 2))
                store.resumeWriter()
                let messageID = try await id
                _ = try await subscribed
                try await waitForFanOut(store)
                for device in [fixture.device, second.device.id] {
                    let pending = try await store.pendingMessages(for: device, after: nil, limit: 10)
                    #expect(pending.map(\.body) == [[UInt8](text: "hello")])
                    #expect(pending.map(\.collapseKey) == ["n"])
                    #expect(try #require(pending.first).id > messageID)
                }
                #expect(try await store.pendingMessages(for: late.device.id, after: nil, limit: 10).isEmpty)
                #expect(try await store.pendingMessages(for: stranger.device, after: nil, limit: 10).isEmpty)
            }
        }
    }

    @Test("a condition message reaches the devices whose topics satisfy it", arguments: StoreKind.allCases)
    func conditionFanOut(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory, configure: { $0.conditionCompiler = FakeConditionCompiler.compile }) { store in
                let fixture = try await makeFixture(store)
                var devices: [DeviceRegistration] = []
                for _ in 0..<4 {
                    devices.append(try await store.registerDevice(project: fixture.project, app: "a", platform: "IOS"))
                }
                // 0: a, b   1: a   2: b   3: c
                _ = try await store.subscribe(tokens: [devices[0].device.token, devices[1].device.token], to: "a", project: fixture.project)
                _ = try await store.subscribe(tokens: [devices[0].device.token, devices[2].device.token], to: "b", project: fixture.project)
                _ = try await store.subscribe(tokens: [devices[3].device.token], to: "c", project: fixture.project)
                _ = try await store.enqueueTopicMessage(
                    NewTopicMessage(project: fixture.project, target: .condition("'a' in topics && 'b' in topics"), body: [1])
                )
                _ = try await store.enqueueTopicMessage(
                    NewTopicMessage(project: fixture.project, target: .condition("'b' in topics || 'c' in topics"), body: [2])
                )
                try await waitForFanOut(store)
                var received: [[[UInt8]]] = []
                for device in devices {
                    received.append(try await store.pendingMessages(for: device.device.id, after: nil, limit: 10).map(\.body))
                }
                #expect(received == [[[1], [2]], [], [[2]], [[2]]])
                do {
                    _ = try await store.enqueueTopicMessage(
                        NewTopicMessage(project: fixture.project, target: .condition("'a' in topics &&"), body: [3])
                    )
                    Issue.record("a malformed condition was accepted")
                } catch let error as StoreError {
                    #expect(error.code == .invalidArgument)
                }
                do {
                    _ = try await store.enqueueTopicMessage(
                        NewTopicMessage(project: fixture.project, target: .topic("a"), body: [3], timeToLive: .zero)
                    )
                    Issue.record("a TTL 0 topic message was accepted")
                } catch let error as StoreError {
                    #expect(error.code == .invalidArgument)
                }
            }
        }
    }

    @Test("20,000 subscribers: a restart in the middle of the expansion finishes it without duplicates", arguments: StoreKind.allCases)
    func largeFanOutSurvivesRestart(kind: StoreKind) async throws {
        let subscribers = 20_000
        try await withTemporaryDirectory { directory in
            let (project, devices) = try await withStore(kind, in: directory, configure: { $0.automaticFanOut = false }) { store in
                let project = try await store.createProject(name: "big").project
                var devices: [Device] = []
                try await withThrowingTaskGroup(of: [Device].self) { group in
                    for _ in 0..<20 {
                        group.addTask {
                            var mine: [Device] = []
                            for _ in 0..<(subscribers / 20) {
                                mine.append(try await store.registerDevice(project: project.id, app: "a", platform: "IOS").device)
                            }
                            return mine
                        }
                    }
                    for try await chunk in group {
                        devices += chunk
                    }
                }
                for start in stride(from: 0, to: devices.count, by: 1000) {
                    let tokens = devices[start..<(start + 1000)].map(\.token)
                    let results = try await store.subscribe(tokens: tokens, to: "all", project: project.id)
                    #expect(results.allSatisfy { $0 == .ok })
                }
                _ = try await store.enqueueTopicMessage(NewTopicMessage(project: project.id, target: .topic("all"), body: [42]))
                for _ in 0..<7 {
                    #expect(try await store.expandOneFanOutBatch())
                }
                #expect(try await store.queueStatistics().storedMessages == 7_000)
                #expect(try await store.queueStatistics().topicMessagesExpanding == 1)
                return (project, devices)
            }
            // Reopen with the automatic fan-out: it resumes after the 7 committed batches.
            try await withStore(kind, in: directory) { store in
                try await waitForFanOut(store)
                let statistics = try await store.queueStatistics()
                #expect(statistics.storedMessages == subscribers)
                #expect(statistics.devicesWithMessages == subscribers)
                #expect(statistics.topicMessagesExpanding == 0)
                for device in devices.shuffled().prefix(50) {
                    #expect(try await store.pendingMessages(for: device.id, after: nil, limit: 10).map(\.body) == [[42]])
                }
                _ = project
            }
        }
    }

    @Test("unsubscribe and project deletion stop later topic messages and clean subscriptions", arguments: StoreKind.allCases)
    func cleanup(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                let token = fixture.registration.device.token
                _ = try await store.subscribe(tokens: [token], to: "news", project: fixture.project)
                _ = try await store.unsubscribe(tokens: [token], from: "news", project: fixture.project)
                _ = try await store.enqueueTopicMessage(NewTopicMessage(project: fixture.project, target: .topic("news"), body: [1]))
                try await waitForFanOut(store)
                #expect(try await store.pendingMessages(for: fixture.device, after: nil, limit: 10).isEmpty)
                _ = try await store.subscribe(tokens: [token], to: "news", project: fixture.project)
                #expect(try await store.deleteProject(named: "shop"))
                #expect(try await store.subscriptions(of: fixture.device).isEmpty)
            }
        }
    }
}

/// Waits until no topic message is left to expand (bounded: fails after about a minute).
func waitForFanOut(_ store: any PushStore) async throws {
    for _ in 0..<6_000 {
        if try await store.queueStatistics().topicMessagesExpanding == 0 {
            return
        }
        try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("the fan-out did not finish")
}

/// The names in the `topics` table of the store of `directory`, sorted (read beside the open store).
func topicNames(_ kind: StoreKind, _ directory: String) async throws -> [String] {
    switch kind {
    case .sqlite:
        let connection = try SQLiteConnection(path: directory + "/pushrelay.sqlite", busyTimeout: .seconds(5))
        defer { connection.close() }
        let select = try connection.statement("SELECT name FROM topics ORDER BY name")
        var names: [String] = []
        while try select.step() { names.append(select.text(0) ?? "") }
        return names
    case .postgres:
        let result = try await TestPostgres.shared.psql(
            "SELECT name FROM topics ORDER BY name", database: databaseName(for: directory))
        return result.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}
