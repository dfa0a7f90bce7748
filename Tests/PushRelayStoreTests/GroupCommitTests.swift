import PushRelayCore
import Testing
@testable import PushRelayStore

@Suite("Store: group commit")
struct GroupCommitTests {
    @Test("concurrent enqueues share one transaction", arguments: StoreKind.allCases)
    func concurrentEnqueuesShareOneTransaction(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                let callers = 64
                let before = store.groupCommitStatistics
                store.suspendWriter()
                try await withThrowingTaskGroup(of: MessageID?.self) { group in
                    for index in 0..<callers {
                        group.addTask {
                            try await store.enqueue([NewMessage(device: fixture.device, body: [UInt8(index)])])[0].messageID
                        }
                    }
                    // Every caller is waiting in the queue; bounded wait (no timing assertion).
                    await waitUntilQueued(store, callers)
                    #expect(store.queuedWriteRequests == callers)
                    store.resumeWriter()
                    var ids: Set<MessageID> = []
                    for try await id in group {
                        ids.insert(try #require(id))
                    }
                    #expect(ids.count == callers)
                }
                let after = store.groupCommitStatistics
                #expect(after.transactions == before.transactions + 1)
                #expect(after.requests == before.requests + callers)
                #expect(after.largestGroup == callers)
                #expect(try await store.pendingMessages(for: fixture.device, after: nil, limit: 1000).count == callers)
            }
        }
    }

    @Test("a failing request in a group fails alone; the others commit", arguments: StoreKind.allCases)
    func failingRequestFailsAlone(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                store.suspendWriter()
                async let good = store.enqueue([NewMessage(device: fixture.device, body: [1])])
                async let duplicate: Result<ProjectCredentials, any Error> = {
                    do { return .success(try await store.createProject(name: "shop")) } catch { return .failure(error) }
                }()
                async let fresh = store.createProject(name: "fresh")
                #expect(await waitUntilQueued(store, 3))
                store.resumeWriter()
                #expect(try await good[0].messageID != nil)
                #expect(try await fresh.project.name == "fresh")
                guard case .failure(let error as StoreError) = await duplicate else {
                    Issue.record("duplicate project name accepted")
                    return
                }
                #expect(error.code == .alreadyExists)
                #expect(try await store.projects().map(\.name) == ["fresh", "shop"])
            }
        }
    }

    @Test("a closed store refuses writes and reads", arguments: StoreKind.allCases)
    func closed(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            let store = try await openStore(kind, in: directory)
            await store.close()
            do {
                _ = try await store.createProject(name: "x")
                Issue.record("write after close succeeded")
            } catch let error as StoreError {
                #expect(error.code == .closed)
            }
            do {
                _ = try await store.projects()
                Issue.record("read after close succeeded")
            } catch let error as StoreError {
                #expect(error.code == .closed)
            }
        }
    }
}
