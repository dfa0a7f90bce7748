import Testing
@testable import PushRelayStore

@Suite("SQLiteStore smoke")
struct SQLiteStoreSmokeTests {
    @Test("enqueue, pending, acknowledge")
    func enqueuePendingAcknowledge() async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(in: directory) { store in
                let fixture = try await makeFixture(store)
                let results = try await store.enqueue([
                    NewMessage(device: fixture.device, body: [UInt8](text: "one")),
                    NewMessage(device: fixture.device, body: [UInt8](text: "two")),
                ])
                let ids = results.compactMap(\.messageID)
                #expect(ids.count == 2)
                #expect(ids[0] < ids[1])
                let pending = try await store.pendingMessages(for: fixture.device, after: nil, limit: 10)
                #expect(pending.map(\.body) == [[UInt8](text: "one"), [UInt8](text: "two")])
                #expect(try await store.acknowledge(device: fixture.device, upTo: ids[0]) == 1)
                let rest = try await store.pendingMessages(for: fixture.device, after: nil, limit: 10)
                #expect(rest.map(\.id) == [ids[1]])
            }
        }
    }
}
