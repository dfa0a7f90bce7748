import PushRelayCore
import Testing

@Suite("Queue policy")
struct QueuePolicyTests {
    /// Hands out 1, 2, 3, … like the store's id generator.
    final class Counter {
        var last: Int64 = 0
        func next() -> Int64 {
            self.last += 1
            return self.last
        }
    }

    let now: Int64 = 1_700_000_000_000_000

    func machine(_ state: QueuePolicy.State = .init(), policy: QueuePolicy = QueuePolicy()) -> QueuePolicy.Machine {
        QueuePolicy.Machine(policy: policy, state: state)
    }

    @Test("a non-collapsible message is stored with the next id")
    func storesPlainMessage() {
        var machine = self.machine()
        let ids = Counter()
        let actions = machine.enqueue(.init(collapseKey: nil, timeToLiveSeconds: 60), nowMicros: self.now, nextID: ids.next)
        #expect(actions == [.store(id: 1)])
        #expect(machine.state.pendingNonCollapsible == 1)
    }

    @Test("time to live 0 is never stored")
    func ttlZeroIsNotStored() {
        var machine = self.machine()
        let ids = Counter()
        let actions = machine.enqueue(.init(collapseKey: "k", timeToLiveSeconds: 0), nowMicros: self.now, nextID: ids.next)
        #expect(actions == [.deliverNowOrDrop])
        #expect(ids.last == 0)
        #expect(machine.state == QueuePolicy.State())
    }

    @Test("a collapse key replaces the pending message with the same key")
    func collapseReplaces() {
        var machine = self.machine()
        let ids = Counter()
        let arrival = QueuePolicy.Arrival(collapseKey: "score", timeToLiveSeconds: 60)
        #expect(machine.enqueue(arrival, nowMicros: self.now, nextID: ids.next) == [.store(id: 1)])
        #expect(machine.enqueue(arrival, nowMicros: self.now, nextID: ids.next) == [.collapse(ids: [1]), .store(id: 2)])
        #expect(machine.state.collapsible.map(\.id) == [2])
        #expect(machine.state.pendingNonCollapsible == 0)
    }

    @Test("a fifth collapse key evicts the oldest collapsible message")
    func fifthKeyEvictsOldest() {
        var machine = self.machine()
        let ids = Counter()
        for key in ["a", "b", "c", "d"] {
            _ = machine.enqueue(.init(collapseKey: key, timeToLiveSeconds: 60), nowMicros: self.now, nextID: ids.next)
        }
        // Refresh "a" so that "b" becomes the oldest.
        #expect(
            machine.enqueue(.init(collapseKey: "a", timeToLiveSeconds: 60), nowMicros: self.now, nextID: ids.next)
                == [.collapse(ids: [1]), .store(id: 5)]
        )
        let actions = machine.enqueue(.init(collapseKey: "e", timeToLiveSeconds: 60), nowMicros: self.now, nextID: ids.next)
        #expect(actions == [.collapse(ids: [2]), .store(id: 6)])
        #expect(Set(machine.state.collapsible.map(\.collapseKey)) == ["c", "d", "a", "e"])
    }

    @Test("expired collapsible messages count toward no limit and are removed")
    func expiredCollapsibleDoNotCount() {
        let expired = (0..<4).map {
            QueuePolicy.CollapsibleEntry(id: Int64($0 + 1), collapseKey: "k\($0)", expiresAtMicros: self.now - 1)
        }
        var machine = self.machine(.init(collapsible: expired))
        let ids = Counter()
        ids.last = 10
        let actions = machine.enqueue(.init(collapseKey: "new", timeToLiveSeconds: 60), nowMicros: self.now, nextID: ids.next)
        #expect(actions == [.remove(ids: [1, 2, 3, 4]), .store(id: 11)])
        #expect(machine.state.collapsible.count == 1)
    }

    @Test("the 101st non-collapsible message drops the 100, queues one deleted_messages marker, then itself")
    func overflowDropsAndMarks() {
        var machine = self.machine(.init(pendingNonCollapsible: 100))
        let ids = Counter()
        let actions = machine.enqueue(.init(collapseKey: nil, timeToLiveSeconds: 60), nowMicros: self.now, nextID: ids.next)
        #expect(actions == [.removeAllNonCollapsible(count: 100), .storeDeletedMessagesMarker(id: 1), .store(id: 2)])
        #expect(machine.state.pendingNonCollapsible == 1)
    }

    @Test("a second overflow stores a new marker in place of the first: a device that saw the first hears of it")
    func secondOverflowReplacesTheMarker() {
        var machine = self.machine(.init(pendingNonCollapsible: 1))
        let ids = Counter()
        for _ in 0..<99 {
            _ = machine.enqueue(.init(collapseKey: nil, timeToLiveSeconds: 60), nowMicros: self.now, nextID: ids.next)
        }
        #expect(machine.state.pendingNonCollapsible == 100)
        let actions = machine.enqueue(.init(collapseKey: nil, timeToLiveSeconds: 60), nowMicros: self.now, nextID: ids.next)
        #expect(actions == [.removeAllNonCollapsible(count: 100), .storeDeletedMessagesMarker(id: 100), .store(id: 101)])
        #expect(machine.state.pendingNonCollapsible == 1)
    }

    @Test("collapsible messages do not count toward the 100 limit")
    func collapsibleOutsideLimit() {
        var machine = self.machine(.init(pendingNonCollapsible: 100))
        let ids = Counter()
        let actions = machine.enqueue(.init(collapseKey: "k", timeToLiveSeconds: 60), nowMicros: self.now, nextID: ids.next)
        #expect(actions == [.store(id: 1)])
        #expect(machine.state.pendingNonCollapsible == 100)
    }

    @Test("expired entries are removed apart from the collapsed ones: only unexpired messages count as dropped")
    func expiredApartFromCollapsed() {
        let entries = [
            QueuePolicy.CollapsibleEntry(id: 1, collapseKey: "a", expiresAtMicros: self.now - 1),
            QueuePolicy.CollapsibleEntry(id: 2, collapseKey: "b", expiresAtMicros: self.now + 1_000_000),
            QueuePolicy.CollapsibleEntry(id: 3, collapseKey: "c", expiresAtMicros: self.now - 1),
        ]
        var machine = self.machine(.init(collapsible: entries))
        let ids = Counter()
        ids.last = 10
        let actions = machine.enqueue(.init(collapseKey: "b", timeToLiveSeconds: 60), nowMicros: self.now, nextID: ids.next)
        #expect(actions == [.remove(ids: [1, 3]), .collapse(ids: [2]), .store(id: 11)])
    }

    @Test("limits are configurable")
    func customLimits() {
        var machine = self.machine(policy: QueuePolicy(maxPendingNonCollapsible: 2, maxCollapseKeys: 1))
        let ids = Counter()
        let plain = QueuePolicy.Arrival(collapseKey: nil, timeToLiveSeconds: 60)
        _ = machine.enqueue(plain, nowMicros: self.now, nextID: ids.next)
        _ = machine.enqueue(plain, nowMicros: self.now, nextID: ids.next)
        #expect(
            machine.enqueue(plain, nowMicros: self.now, nextID: ids.next)
                == [.removeAllNonCollapsible(count: 2), .storeDeletedMessagesMarker(id: 3), .store(id: 4)]
        )
        _ = machine.enqueue(.init(collapseKey: "x", timeToLiveSeconds: 60), nowMicros: self.now, nextID: ids.next)
        #expect(
            machine.enqueue(.init(collapseKey: "y", timeToLiveSeconds: 60), nowMicros: self.now, nextID: ids.next)
                == [.collapse(ids: [5]), .store(id: 6)]
        )
    }
}
