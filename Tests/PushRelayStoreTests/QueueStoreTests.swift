import PushRelayCore
import Foundation
import NIOConcurrencyHelpers
import Testing
import TestSupport
@testable import PushRelayStore

@Suite("Store: queues")
struct QueueStoreTests {
    @Test("FIFO by id; pending after an id; limit; acknowledge by ids and up to an id", arguments: StoreKind.allCases)
    func fifoAndAcknowledge(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                var ids: [MessageID] = []
                for index in 0..<5 {
                    let result = try await store.enqueue([NewMessage(device: fixture.device, body: [UInt8(index)])])
                    ids.append(try #require(result[0].messageID))
                }
                #expect(ids == ids.sorted() && Set(ids).count == 5)
                let all = try await store.pendingMessages(for: fixture.device, after: nil, limit: 100)
                #expect(all.map(\.id) == ids && all.map(\.body) == (0..<5).map { [UInt8($0)] })
                #expect(all.allSatisfy { $0.kind == .message && $0.device == fixture.device })
                #expect(try await store.pendingMessages(for: fixture.device, after: ids[1], limit: 2).map(\.id) == [ids[2], ids[3]])
                #expect(try await store.acknowledge(device: fixture.device, ids: [ids[3], ids[3], MessageID(rawValue: 1)]) == 1)
                #expect(try await store.acknowledge(device: fixture.device, upTo: ids[1]) == 2)
                #expect(try await store.pendingMessages(for: fixture.device, after: nil, limit: 100).map(\.id) == [ids[2], ids[4]])
            }
        }
    }

    /// The forms the event-loop routes call (no task of their own) answer as the async ones: a send is stored, an
    /// acknowledgement by ids and one up to an id delete, a time-to-live-0 send is numbered and not stored, and a
    /// closed store answers `closed` at once.
    @Test("the task-free forms store, acknowledge and refuse once closed", arguments: StoreKind.allCases)
    func taskFreeForms(kind: StoreKind) async throws {
        /// The outcome a task-free form hands its completion.
        func outcome<T: Sendable>(
            _ call: (@escaping @Sendable (Result<T, any Error>) -> Void) -> Void
        ) async -> Result<T, any Error> {
            await withCheckedContinuation { continuation in call { continuation.resume(returning: $0) } }
        }
        try await withTemporaryDirectory { directory in
            var closedStore: (any TestStore)?
            var device: DeviceID?
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                var ids: [MessageID] = []
                for index in 0..<4 {
                    let results = try await outcome { store.enqueue([NewMessage(device: fixture.device, body: [UInt8(index)])], completion: $0) }.get()
                    ids.append(try #require(results.first?.messageID))
                }
                let transient = try await outcome {
                    store.enqueue([NewMessage(device: fixture.device, body: [9], timeToLive: .zero)], completion: $0)
                }.get()
                guard case .transient(let transientID) = transient.first else {
                    Issue.record("not transient: \(transient)")
                    return
                }
                #expect(transientID > ids[3])
                #expect(try await store.pendingMessages(for: fixture.device, after: nil, limit: 100).map(\.id) == ids)
                #expect(try await outcome { store.acknowledge(device: fixture.device, ids: [ids[2]], completion: $0) }.get() == 1)
                #expect(try await outcome { store.acknowledge(device: fixture.device, ids: [], completion: $0) }.get() == 0)
                #expect(try await outcome { store.acknowledge(device: fixture.device, upTo: ids[1], completion: $0) }.get() == 2)
                #expect(try await store.pendingMessages(for: fixture.device, after: nil, limit: 100).map(\.id) == [ids[3]])
                closedStore = store
                device = fixture.device
            }
            let store = try #require(closedStore)
            let closed = try #require(device)
            for answer in [
                await outcome { store.enqueue([NewMessage(device: closed, body: [1])], completion: $0) }.map { _ in 0 },
                await outcome { store.acknowledge(device: closed, upTo: MessageID(rawValue: 1), completion: $0) },
            ] {
                #expect(throws: StoreError.self) { try answer.get() }
            }
        }
    }

    @Test("a device cannot acknowledge another device's messages", arguments: StoreKind.allCases)
    func acknowledgeIsPerDevice(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                let other = try await store.registerDevice(project: fixture.project, app: "a", platform: "IOS")
                let id = try #require(try await store.enqueue([NewMessage(device: fixture.device, body: [1])])[0].messageID)
                #expect(try await store.acknowledge(device: other.device.id, ids: [id]) == 0)
                #expect(try await store.acknowledge(device: other.device.id, upTo: id) == 0)
                #expect(try await store.pendingMessages(for: fixture.device, after: nil, limit: 10).count == 1)
            }
        }
    }

    @Test("a collapse key replaces the pending message; a fifth key evicts the oldest", arguments: StoreKind.allCases)
    func collapse(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                func send(_ key: String, _ body: UInt8) async throws {
                    _ = try await store.enqueue([NewMessage(device: fixture.device, body: [body], collapseKey: key)])
                }
                try await send("a", 1)
                try await send("b", 2)
                try await send("a", 3)
                var pending = try await store.pendingMessages(for: fixture.device, after: nil, limit: 100)
                #expect(pending.map(\.body) == [[2], [3]])
                #expect(pending.map(\.collapseKey) == ["b", "a"])
                try await send("c", 4)
                try await send("d", 5)
                try await send("e", 6)  // evicts "b", the oldest
                pending = try await store.pendingMessages(for: fixture.device, after: nil, limit: 100)
                #expect(pending.map(\.collapseKey) == ["a", "c", "d", "e"])
            }
        }
    }

    @Test("over 100 non-collapsible messages: dropped, one deleted_messages marker, then the new message", arguments: StoreKind.allCases)
    func overflow(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                let batch = (0..<100).map { NewMessage(device: fixture.device, body: [UInt8($0)]) }
                _ = try await store.enqueue(batch)
                _ = try await store.enqueue([NewMessage(device: fixture.device, body: [7], collapseKey: "keep")])
                #expect(try await store.pendingMessages(for: fixture.device, after: nil, limit: 1000).count == 101)
                _ = try await store.enqueue([NewMessage(device: fixture.device, body: [200])])
                var pending = try await store.pendingMessages(for: fixture.device, after: nil, limit: 1000)
                #expect(pending.map(\.kind) == [.message, .deletedMessages, .message])
                #expect(pending.map(\.body) == [[7], [], [200]])
                // Another overflow in one request: still one marker.
                _ = try await store.enqueue((0..<150).map { NewMessage(device: fixture.device, body: [UInt8($0)]) })
                pending = try await store.pendingMessages(for: fixture.device, after: nil, limit: 1000)
                #expect(pending.filter { $0.kind == .deletedMessages }.count == 1)
                #expect(pending.filter { $0.kind == .message && $0.collapseKey == nil }.count == 51)
            }
        }
    }

    /// A device that received the first overflow's marker and dropped its connection before acknowledging it
    /// reconnects acknowledging up to the last message it saw (what `Last-Event-ID` does): a second overflow
    /// meanwhile must leave a marker past that id, or the device never hears that messages were dropped again.
    @Test("a second overflow after the device saw the first marker queues a marker past the ids it saw", arguments: StoreKind.allCases)
    func secondOverflowAfterTheMarkerWasSeen(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                for index in 0..<101 {
                    _ = try await store.enqueue([NewMessage(device: fixture.device, body: [UInt8(index)])])
                }
                let seen = try await store.pendingMessages(for: fixture.device, after: nil, limit: 1000)
                #expect(seen.map(\.kind) == [.deletedMessages, .message])
                let lastSeen = try #require(seen.last?.id)
                for index in 0..<100 {
                    _ = try await store.enqueue([NewMessage(device: fixture.device, body: [UInt8(index)])])
                }
                #expect(try await store.acknowledge(device: fixture.device, upTo: lastSeen) == 0)
                let pending = try await store.pendingMessages(for: fixture.device, after: nil, limit: 1000)
                #expect(pending.map(\.kind) == [.deletedMessages, .message])
                #expect(pending.allSatisfy { $0.id > lastSeen })
                #expect(pending.last?.body == [99])
            }
        }
    }

    /// PostgreSQL: the writer locks a batch's devices and then reads their queues; a node that waited for another
    /// node's lock must see the rows that node committed meanwhile, or its queue policy works on a stale model.
    /// Another session holds the device's row lock while it adds the 100th message; the send that waited for the
    /// lock finds 100 and overflows (marker), as it would had it come after.
    @Test("PostgreSQL: a send that waited for another node's lock on the device sees what that node committed")
    func lockWaitSeesTheOtherNodesCommit() async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(.postgres, in: directory) { store in
                let fixture = try await makeFixture(store)
                _ = try await store.enqueue((0..<99).map { NewMessage(device: fixture.device, body: [UInt8($0)]) })
                let cluster = try await TestPostgres.shared
                let database = databaseName(for: directory)
                let device = fixture.device.rawValue
                let otherNode = Task {
                    try await cluster.psql(
                        """
                        BEGIN; SELECT id FROM devices WHERE id = \(device) FOR UPDATE;
                        INSERT INTO messages (id, device_id, kind, collapse_key, expires_at, body)
                            VALUES (1, \(device), 0, NULL, 9000000000000000, '\\x01');
                        SELECT pg_sleep(1.5); COMMIT;
                        """, database: database)
                }
                // The other session holds the lock once it sleeps.
                var holding = false
                for _ in 0..<200 where !holding {
                    let active = try await cluster.psql(
                        "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(1.5)%' AND state = 'active' AND pid <> pg_backend_pid()",
                        database: database)
                    holding = active.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1"
                    if !holding { try await Task.sleep(for: .milliseconds(20)) }
                }
                #expect(holding)
                let started = ContinuousClock.now
                _ = try await store.enqueue([NewMessage(device: fixture.device, body: [200])])
                #expect(ContinuousClock.now - started > .milliseconds(500), "the send waited for the lock")
                let committed = try await otherNode.value
                #expect(committed.status == 0, "\(committed.combined)")
                let pending = try await store.pendingMessages(for: fixture.device, after: nil, limit: 1000)
                // A stale model (99 rows) would have stored the send as the 101st row, without a marker.
                #expect(pending.count == 2, "\(pending.count) rows")
                #expect(pending.first?.kind == .deletedMessages)
                #expect(pending.last?.body == [200])
            }
        }
    }

    /// PostgreSQL: another node's rows are read back only for the devices that stream on this node
    /// (``PushStore/setLocalStreams(_:)``): a batch for none of them reports nothing, a mixed one only theirs.
    @Test("PostgreSQL: another node's rows are read back only for the devices streaming here")
    func remoteCommitOnlyForLocalStreams() async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(.postgres, in: directory) { nodeA in
                let fixture = try await makeFixture(nodeA)
                let second = try await nodeA.registerDevice(project: fixture.project, app: "com.shop", platform: "IOS")
                try await withStore(.postgres, in: directory) { nodeB in
                    let seen = NIOLockedValueBox<[RemoteCommit]>([])
                    let streamed = second.device.id
                    nodeB.setLocalStreams { devices in devices.filter { $0 == streamed } }
                    nodeB.setRemoteCommitObserver { commit in seen.withLockedValue { $0.append(commit) } }
                    // The first batch is for a device that does not stream on B; the second for both.
                    _ = try await nodeA.enqueue([NewMessage(device: fixture.device, body: Array(text: "one"))])
                    let results = try await nodeA.enqueue([
                        NewMessage(device: fixture.device, body: Array(text: "two")),
                        NewMessage(device: streamed, body: Array(text: "three")),
                    ])
                    guard case .stored(let third) = results.last else {
                        Issue.record("not stored: \(results)")
                        return
                    }
                    let deadline = ContinuousClock.now + .seconds(10)
                    while seen.withLockedValue({ $0.isEmpty }), ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(10))
                    }
                    let commits = seen.withLockedValue { $0 }
                    guard case .rows(let rows) = commits.first else {
                        Issue.record("expected the rows, got \(commits)")
                        return
                    }
                    #expect(rows.map(\.id) == [third], "only the streamed device's row of the second batch")
                    #expect(rows.map(\.body) == [Array(text: "three")])
                    nodeB.setRemoteCommitObserver(nil)
                    nodeB.setLocalStreams(nil)
                }
            }
        }
    }

    /// PostgreSQL: a batch committed on one node reaches another node's remote-commit observer as the rows
    /// themselves (read back once by id range), bodies and ids as the sender's node stored them, in id order.
    @Test("PostgreSQL: another node's commit arrives as its rows, read back once")
    func remoteCommitCarriesTheRows() async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(.postgres, in: directory) { nodeA in
                let fixture = try await makeFixture(nodeA)
                let second = try await nodeA.registerDevice(project: fixture.project, app: "com.shop", platform: "IOS")
                try await withStore(.postgres, in: directory) { nodeB in
                    let seen = NIOLockedValueBox<[RemoteCommit]>([])
                    nodeB.setRemoteCommitObserver { commit in seen.withLockedValue { $0.append(commit) } }
                    let results = try await nodeA.enqueue([
                        NewMessage(device: fixture.device, body: Array(text: "one")),
                        NewMessage(device: second.device.id, body: Array(text: "two"), collapseKey: "k"),
                    ])
                    let ids = results.compactMap { result -> MessageID? in
                        if case .stored(let id) = result { return id }
                        return nil
                    }
                    #expect(ids.count == 2)
                    let deadline = ContinuousClock.now + .seconds(10)
                    while seen.withLockedValue({ $0.isEmpty }), ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(10))
                    }
                    let commits = seen.withLockedValue { $0 }
                    guard case .rows(let rows) = commits.first else {
                        Issue.record("expected the rows, got \(commits)")
                        return
                    }
                    #expect(rows.map(\.id) == ids)
                    #expect(rows.map(\.body) == [Array(text: "one"), Array(text: "two")])
                    #expect(rows.map(\.device) == [fixture.device, second.device.id])
                    #expect(rows.last?.collapseKey == "k")
                    nodeB.setRemoteCommitObserver(nil)
                }
            }
        }
    }

    @Test("time to live: 0 is never stored; expired messages leave pending and are purged", arguments: StoreKind.allCases)
    func timeToLive(kind: StoreKind) async throws {
        let clock = FakeClock()
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory, clock: clock) { store in
                let fixture = try await makeFixture(store)
                let zero = try await store.enqueue([NewMessage(device: fixture.device, body: [0], timeToLive: .zero)])
                guard case .transient(let transientID) = zero[0] else {
                    Issue.record("TTL 0 was not transient: \(zero)")
                    return
                }
                let results = try await store.enqueue([
                    NewMessage(device: fixture.device, body: [1], timeToLive: .seconds(10)),
                    NewMessage(device: fixture.device, body: [2], timeToLive: .seconds(100)),
                    NewMessage(device: fixture.device, body: [3], timeToLive: .zero),
                ])
                #expect(try #require(results[0].messageID) > transientID)
                guard case .transient = results[2] else {
                    Issue.record("TTL 0 in a batch was stored")
                    return
                }
                #expect(try await store.pendingMessages(for: fixture.device, after: nil, limit: 10).map(\.body) == [[1], [2]])
                clock.advance(by: 11)
                #expect(try await store.pendingMessages(for: fixture.device, after: nil, limit: 10).map(\.body) == [[2]])
                #expect(try await store.queueStatistics().storedMessages == 2)
                #expect(try await store.purge(limit: 1000).expiredMessages == 1)
                #expect(try await store.queueStatistics().storedMessages == 1)
                clock.advance(by: 100)
                #expect(try await store.pendingMessages(for: fixture.device, after: nil, limit: 10).isEmpty)
                #expect(try await store.purge(limit: 1000).expiredMessages == 1)
            }
        }
    }

    /// Audit-q: one purge of at most 10,000 a `purge_interval` let a higher rate of expiring messages pile up.
    @Test("a purge round goes on in passes while a pass deletes its whole batch", arguments: StoreKind.allCases)
    func purgeCatchesUp(kind: StoreKind) async throws {
        let clock = FakeClock()
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory, clock: clock) { store in
                let fixture = try await makeFixture(store)
                _ = try await store.enqueue((0..<7).map {
                    NewMessage(device: fixture.device, body: [UInt8($0)], timeToLive: .seconds(10))
                })
                clock.advance(by: 11)
                var passes: [Int] = []
                try await store.purgeCatchingUp(batch: 3, maxPasses: 10) { passes.append($0.expiredMessages) }
                #expect(passes == [3, 3, 1])
                #expect(try await store.queueStatistics().storedMessages == 0)

                // At most maxPasses passes a round.
                _ = try await store.enqueue((0..<7).map {
                    NewMessage(device: fixture.device, body: [UInt8($0)], timeToLive: .seconds(10))
                })
                clock.advance(by: 11)
                passes = []
                try await store.purgeCatchingUp(batch: 2, maxPasses: 2) { passes.append($0.expiredMessages) }
                #expect(passes == [2, 2])
                #expect(try await store.queueStatistics().storedMessages == 3)
            }
        }
    }

    @Test("SQLite: the purge sweeps the queue in id order, a chunk per request, resuming where it stopped")
    func purgeSweepsInChunks() async throws {
        let clock = FakeClock()
        try await withTemporaryDirectory { directory in
            try await withStore(.sqlite, in: directory, clock: clock, configure: { $0.expirySweep = (3, 2) }) { store in
                let fixture = try await makeFixture(store)
                // Ten messages in id order; the odd ones live 10 s, the even ones 1,000 s.
                for index in 0..<10 {
                    _ = try await store.enqueue([
                        NewMessage(device: fixture.device, body: [UInt8(index)], timeToLive: .seconds(index % 2 == 1 ? 10 : 1000))
                    ])
                }
                clock.advance(by: 11)
                // Two chunks of three rows: messages 0–5, so 1, 3 and 5.
                #expect(try await store.purge(limit: 1000).expiredMessages == 3)
                // On from 6: 7, then 9 and the end of the table.
                #expect(try await store.purge(limit: 1000).expiredMessages == 2)
                // From the start again: nothing left to purge.
                #expect(try await store.purge(limit: 1000).expiredMessages == 0)
                #expect(try await store.queueStatistics().storedMessages == 5)
                clock.advance(by: 1000)
                // All five left are expired: the limit stops after 0 and 2, and the next purge goes on from 4
                // (the cursor stopped at the last row deleted, not the last examined).
                #expect(try await store.purge(limit: 2).expiredMessages == 2)
                #expect(try await store.purge(limit: 1000).expiredMessages == 3)
                #expect(try await store.queueStatistics().storedMessages == 0)
            }
        }
    }

    @Test("expired messages do not count toward the 100 limit", arguments: StoreKind.allCases)
    func expiredDoNotCount(kind: StoreKind) async throws {
        let clock = FakeClock()
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory, clock: clock) { store in
                let fixture = try await makeFixture(store)
                _ = try await store.enqueue((0..<100).map { _ in
                    NewMessage(device: fixture.device, body: [1], timeToLive: .seconds(5))
                })
                clock.advance(by: 6)
                _ = try await store.enqueue([NewMessage(device: fixture.device, body: [2])])
                let pending = try await store.pendingMessages(for: fixture.device, after: nil, limit: 1000)
                #expect(pending.map(\.kind) == [.message])
            }
        }
    }

    @Test("the writer's cached queue state follows acknowledgements made by another process", arguments: StoreKind.allCases)
    func cachedStateSeesOtherProcess(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { daemon in
                let fixture = try await makeFixture(daemon)
                for index in 0..<100 {
                    _ = try await daemon.enqueue([NewMessage(device: fixture.device, body: [UInt8(index)])])
                }
                try await withStore(kind, in: directory) { cli in
                    let acknowledged = try await cli.acknowledge(device: fixture.device, upTo: MessageID(rawValue: Int64.max))
                    #expect(acknowledged == 100)
                }
                _ = try await daemon.enqueue([NewMessage(device: fixture.device, body: [200])])
                let pending = try await daemon.pendingMessages(for: fixture.device, after: nil, limit: 1000)
                #expect(pending.map(\.kind) == [.message])
            }
        }
    }

    @Test("messages and ids survive close and reopen; ids keep increasing even if the clock went back", arguments: StoreKind.allCases)
    func reopen(kind: StoreKind) async throws {
        let clock = FakeClock()
        try await withTemporaryDirectory { directory in
            let (fixture, firstIDs) = try await withStore(kind, in: directory, clock: clock) { store in
                let fixture = try await makeFixture(store)
                let results = try await store.enqueue((0..<3).map { NewMessage(device: fixture.device, body: [UInt8($0)]) })
                _ = try await store.acknowledge(device: fixture.device, upTo: try #require(results[2].messageID))
                _ = try await store.enqueue([NewMessage(device: fixture.device, body: [9])])
                let pending = try await store.pendingMessages(for: fixture.device, after: nil, limit: 10)
                return (fixture, pending.map(\.id) + results.compactMap(\.messageID))
            }
            clock.advance(by: -3600)
            try await withStore(kind, in: directory, clock: clock) { store in
                let pending = try await store.pendingMessages(for: fixture.device, after: nil, limit: 10)
                #expect(pending.map(\.body) == [[9]])
                #expect(try await store.authenticateServerKey(fixture.credentials.serverKey) == fixture.credentials.project)
                #expect(try await store.authenticateDevice(secret: fixture.registration.secret) == fixture.registration.device)
                let next = try #require(try await store.enqueue([NewMessage(device: fixture.device, body: [10])])[0].messageID)
                #expect(next > firstIDs.max()!)
                #expect(store.nextTransientMessageID() > next)
            }
        }
    }

    /// SQLite: a time-to-live-0 send queued behind a stored one completes after the stored row has reached the
    /// commit observer (it takes the writer's queue); numbered at once, it completed before that commit.
    @Test("SQLite: a time-to-live-0 send completes after the stored rows numbered before it reached the observer")
    func ttlZeroWaitsForEarlierCommitSQLite() async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(.sqlite, in: directory) { store in
                let fixture = try await makeFixture(store)
                let observed = NIOLockedValueBox<[MessageID]>([])
                store.setCommitObserver { rows in observed.withLockedValue { $0 += rows.map(\.id) } }
                let seenAtCompletion = NIOLockedValueBox<[MessageID]?>(nil)
                let stored = NIOLockedValueBox<MessageID?>(nil)
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    let both = NIOLockedValueBox(0)
                    @Sendable func finished() { if both.withLockedValue({ $0 += 1; return $0 }) == 2 { done.resume() } }
                    store.enqueue([NewMessage(device: fixture.device, body: [1])]) { result in
                        stored.withLockedValue { $0 = try? result.get().first?.messageID }
                        finished()
                    }
                    store.enqueue([NewMessage(device: fixture.device, body: [2], timeToLive: .zero)]) { _ in
                        seenAtCompletion.withLockedValue { $0 = observed.withLockedValue { $0 } }
                        finished()
                    }
                }
                let id = try #require(stored.withLockedValue { $0 })
                #expect(seenAtCompletion.withLockedValue { $0 } == [id], "the TTL 0 send completed before the stored row")
                store.setCommitObserver(nil)
            }
        }
    }

    /// SQLite keeps `meta.last_message_id` a second ahead of the ids it hands out, so that most commits leave that
    /// page alone (one WAL frame fewer); ids still never go back, across a reopen or a clock set back.
    @Test("SQLite: the id position is written a second ahead, once per second of ids, and ids never go back")
    func idReservation() async throws {
        let clock = FakeClock()
        func persisted(_ directory: String) throws -> Int64 {
            let connection = try SQLiteConnection(path: directory + "/pushrelay.sqlite", busyTimeout: .seconds(5))
            defer { connection.close() }
            let select = try connection.statement("SELECT value FROM meta WHERE key = 'last_message_id'")
            _ = try select.step()
            defer { try? select.run() }
            return select.int64(0)
        }
        try await withTemporaryDirectory { directory in
            let reservation = WriteTransaction.idReservationMicros
            var last: MessageID = MessageID(rawValue: 0)
            try await withStore(.sqlite, in: directory, clock: clock) { store in
                let fixture = try await makeFixture(store)
                let first = try #require(try await store.enqueue([NewMessage(device: fixture.device, body: [1])])[0].messageID)
                #expect(first.rawValue == UInt64(clock.date.timeIntervalSince1970 * 1_000_000))
                #expect(try persisted(directory) == Int64(first.rawValue) + reservation)
                // Within the second: the row is not written again.
                clock.advance(by: 0.5)
                let second = try #require(try await store.enqueue([NewMessage(device: fixture.device, body: [2])])[0].messageID)
                #expect(second > first)
                #expect(try persisted(directory) == Int64(first.rawValue) + reservation)
                // Past it: written a second ahead of the new position.
                clock.advance(by: 0.6)
                last = try #require(try await store.enqueue([NewMessage(device: fixture.device, body: [3])])[0].messageID)
                #expect(try persisted(directory) == Int64(last.rawValue) + reservation)
                _ = try await store.acknowledge(device: fixture.device, upTo: last)
            }
            // Reopened with the clock set back and no row left: ids go on past everything handed out.
            clock.advance(by: -60)
            try await withStore(.sqlite, in: directory, clock: clock) { store in
                let fixture = try await makeFixture(store, name: "again")
                let next = try #require(try await store.enqueue([NewMessage(device: fixture.device, body: [4])])[0].messageID)
                #expect(Int64(next.rawValue) == Int64(last.rawValue) + reservation + 1)
                #expect(store.nextTransientMessageID() > next)
            }
        }
    }

    /// SQLite hands the rows over from its writer; PostgreSQL from its notification connection, after the commit
    /// (as `RemoteCommit.rows`, this node's own commits included), so the test waits for them there.
    @Test("the commit observer gets every appended row with its body, in id order, once per commit", arguments: StoreKind.allCases)
    func commitObserver(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                let other = try await store.registerDevice(project: fixture.project, app: "a", platform: "IOS")
                let heard = NIOLockedValueBox<[[StoredMessage]]>([])
                store.setCommitObserver { appended in heard.withLockedValue { $0.append(appended) } }
                store.setRemoteCommitObserver { commit in
                    if case .rows(let rows) = commit { heard.withLockedValue { $0.append(rows) } }
                }
                let results = try await store.enqueue([
                    NewMessage(device: fixture.device, body: [1]),
                    NewMessage(device: other.device.id, body: [2], collapseKey: "k"),
                    NewMessage(device: fixture.device, body: [3]),
                ])
                let deadline = ContinuousClock.now + .seconds(10)
                while heard.withLockedValue({ $0.isEmpty }), ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                }
                _ = try await store.enqueue([NewMessage(device: other.device.id, body: [4], timeToLive: .zero)])
                _ = try await store.acknowledge(device: fixture.device, upTo: MessageID(rawValue: Int64.max))
                let commits = heard.withLockedValue { $0 }
                #expect(commits.count == 1)
                let appended = try #require(commits.first)
                #expect(appended.map(\.device) == [fixture.device, other.device.id, fixture.device])
                #expect(appended.map(\.body) == [[1], [2], [3]])
                #expect(appended.map(\.collapseKey) == [nil, "k", nil])
                #expect(appended.map(\.kind) == [.message, .message, .message])
                #expect(appended.map { Optional($0.id) } == results.map(\.messageID))
                #expect(appended.map(\.id) == appended.map(\.id).sorted())
                // What a live stream is handed is what a reconnecting one reads.
                let stored = try await store.pendingMessages(for: other.device.id, after: nil, limit: 10)
                #expect(stored == [appended[1]])
            }
        }
    }

    @Test("the drop observer counts collapsed, overflowed and unregistered messages after their commit, nothing else", arguments: StoreKind.allCases)
    func dropObserver(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                let heard = NIOLockedValueBox(DroppedMessages())
                store.setDropObserver { dropped in heard.withLockedValue { $0.add(dropped) } }
                // Stored, delivered live or acknowledged: no drop.
                let plain = try await store.enqueue([NewMessage(device: fixture.device, body: [1])])
                _ = try await store.enqueue([NewMessage(device: fixture.device, body: [2], timeToLive: .zero)])
                _ = try await store.acknowledge(device: fixture.device, ids: [try #require(plain[0].messageID)])
                #expect(heard.withLockedValue { $0 } == DroppedMessages())
                // A second "a" replaces the first; "b"…"e" then evict the oldest key ("a").
                for key in ["a", "a", "b", "c", "d", "e"] {
                    _ = try await store.enqueue([NewMessage(device: fixture.device, body: [3], collapseKey: key)])
                }
                #expect(heard.withLockedValue { $0 } == DroppedMessages(collapsed: 2))
                // 101 non-collapsible messages: the 101st clears the 100 before it.
                _ = try await store.enqueue((0..<101).map { _ in NewMessage(device: fixture.device, body: [4]) })
                #expect(heard.withLockedValue { $0 } == DroppedMessages(collapsed: 2, overflow: 100))
                // Unregistering a device drops its pending messages.
                let other = try await store.registerDevice(project: fixture.project, app: "a", platform: "IOS")
                _ = try await store.enqueue((0..<3).map { _ in NewMessage(device: other.device.id, body: [5]) })
                #expect(try await store.unregisterDevice(secret: other.secret) != nil)
                #expect(heard.withLockedValue { $0 } == DroppedMessages(collapsed: 2, overflow: 100, unregistered: 3))
                // A failed unregister (unknown secret) drops nothing.
                #expect(try await store.unregisterDevice(secret: "unknown") == nil)
                #expect(heard.withLockedValue { $0 }.unregistered == 3)
            }
        }
    }
}

/// PostgreSQL tests that hold a node's notification reader in its observer (``HeldNotificationReader``): the hold
/// blocks a thread of the cooperative pool, so they run one at a time — two held at once on a 2-core machine would
/// leave the pool nothing for the tests themselves, or for the store's timers.
@Suite("Store: a node's notification reader held", .serialized)
struct HeldNotificationReaderTests {
    /// PostgreSQL: a node's own commit reaches its streams after every commit before it, another node's included.
    /// Handed over straight from the writer, node B's own message overtook node A's earlier one while B was still
    /// reading A's rows back; a stream's cursor then moved past A's row, which it never wrote. Here B's notification
    /// reader is held in the observer with A's rows while B commits: B must deliver nothing meanwhile, then both in
    /// commit order.
    @Test("PostgreSQL: a node's own commits reach its observer in commit order with other nodes' commits")
    func ownCommitsArriveInCommitOrder() async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(.postgres, in: directory) { nodeA in
                let fixture = try await makeFixture(nodeA)
                try await withStore(.postgres, in: directory) { nodeB in
                    let reader = HeldNotificationReader()
                    nodeB.setCommitObserver { rows in reader.delivered.withLockedValue { $0 += rows.map(\.id) } }
                    nodeB.setRemoteCommitObserver { reader.observe($0) }
                    let first = try #require(
                        try await nodeA.enqueue([NewMessage(device: fixture.device, body: [1])]).first?.messageID)
                    #expect(await reader.waitUntilHeld(), "node B never read node A's commit")
                    let second = try #require(
                        try await nodeB.enqueue([NewMessage(device: fixture.device, body: [2])]).first?.messageID)
                    #expect(second > first)
                    try await Task.sleep(for: .milliseconds(100))
                    // Held with A's row, B's reader has recorded nothing yet: B's own row must not have gone ahead.
                    #expect(reader.delivered.withLockedValue { $0 }.isEmpty, "B's own commit overtook A's earlier one")
                    reader.release()
                    let deadline = ContinuousClock.now + .seconds(10)
                    while reader.delivered.withLockedValue({ $0.count }) < 2, ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(10))
                    }
                    #expect(reader.delivered.withLockedValue { $0 } == [first, second])
                    nodeB.setRemoteCommitObserver(nil)
                    nodeB.setCommitObserver(nil)
                }
            }
        }
    }

    /// PostgreSQL: a time-to-live-0 send waits until this node's earlier stored rows came back through its
    /// notification connection (here held in the observer): it must not return meanwhile.
    @Test("PostgreSQL: a time-to-live-0 send returns after this node's earlier stored rows reached the observer")
    func ttlZeroWaitsForEarlierCommitPostgres() async throws {
        try await withTemporaryDirectory { directory in
            // A bound far past the test's waits: only the release lets the send go.
            try await withStore(.postgres, in: directory, configure: { $0.transientOrderTimeout = .seconds(60) }) { store in
                let fixture = try await makeFixture(store)
                let reader = HeldNotificationReader()
                store.setRemoteCommitObserver { reader.observe($0) }
                _ = try await store.enqueue([NewMessage(device: fixture.device, body: [1])])
                #expect(await reader.waitUntilHeld(), "the stored row never reached the observer")
                let returned = NIOLockedValueBox(false)
                let send = Task {
                    let result = try await store.enqueue([NewMessage(device: fixture.device, body: [2], timeToLive: .zero)])
                    returned.withLockedValue { $0 = true }
                    return result
                }
                try await Task.sleep(for: .milliseconds(300))
                #expect(!returned.withLockedValue { $0 }, "the TTL 0 send returned before the stored row reached the streams")
                reader.release()
                let result = try await send.value
                guard case .transient = result.first else {
                    Issue.record("not transient: \(result)")
                    return
                }
                store.setRemoteCommitObserver(nil)
            }
        }
    }

    /// PostgreSQL: `transientOrderTimeout` bounds that wait: with the node's reader held for good (its notification
    /// connection as good as down), a time-to-live-0 send goes after the bound, not never.
    @Test("PostgreSQL: transientOrderTimeout bounds a time-to-live-0 send's wait for earlier rows")
    func ttlZeroWaitIsBounded() async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(.postgres, in: directory, configure: { $0.transientOrderTimeout = .milliseconds(500) }) {
                store in
                let fixture = try await makeFixture(store)
                let reader = HeldNotificationReader()
                store.setRemoteCommitObserver { reader.observe($0) }
                _ = try await store.enqueue([NewMessage(device: fixture.device, body: [1])])
                #expect(await reader.waitUntilHeld(), "the stored row never reached the observer")
                let started = ContinuousClock.now
                let result = try await store.enqueue([NewMessage(device: fixture.device, body: [2], timeToLive: .zero)])
                let waited = ContinuousClock.now - started
                #expect(waited >= .milliseconds(450), "returned after \(waited), before the bound, with the reader held")
                #expect(waited < .seconds(30), "waited \(waited)")
                guard case .transient = result.first else {
                    Issue.record("not transient: \(result)")
                    return
                }
                reader.release()
                store.setRemoteCommitObserver(nil)
            }
        }
    }
}
