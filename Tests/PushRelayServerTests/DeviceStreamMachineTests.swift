import Foundation
import PushRelayCore
import PushRelayStore
import Testing

@testable import PushRelayServer

/// A device stream's decisions without a socket or a store: what each input (work from the subscription, a store
/// read, a failed write, the end) makes the stream do next.
@Suite("Device stream machine")
struct DeviceStreamMachineTests {
    private typealias Machine = DeviceStreamMachine
    private typealias Work = DeliveryHub.Subscription.Work

    private static let device = DeviceID(rawValue: 7)

    private func rows(_ ids: UInt64...) -> [StoredMessage] {
        ids.map {
            StoredMessage(
                id: MessageID($0), device: Self.device, kind: .message, body: [1], collapseKey: nil,
                expiresAt: Date(timeIntervalSinceNow: 60))
        }
    }

    private func transient(_ ids: UInt64...) -> [TransientMessage] {
        ids.map { TransientMessage(id: MessageID($0), body: [2]) }
    }

    /// What an action writes, as ids: stored rows, then transient messages, then whether a heartbeat.
    private struct Written: Equatable {
        var stored: [UInt64] = []
        var transient: [UInt64] = []
        var heartbeat = false
    }

    private func written(_ batch: Machine.Batch) -> Written {
        Written(
            stored: batch.stored.map(\.id.rawValue), transient: batch.transient.map(\.id.rawValue),
            heartbeat: batch.heartbeat)
    }

    /// The batch of a `.write` action, or nil for any other action.
    private func write(_ action: Machine.Action) -> Written? {
        if case .write(let batch) = action { return written(batch) }
        return nil
    }

    private func isNext(_ action: Machine.Action) -> Bool {
        if case .next = action { return true }
        return false
    }

    private func isNone(_ action: Machine.Action) -> Bool {
        if case .none = action { return true }
        return false
    }

    private func isFinish(_ action: Machine.Action) -> Bool {
        if case .finish = action { return true }
        return false
    }

    /// The cursor of a `.readStore` action (`.some(nil)`: from the start), or nil for any other action.
    private func readAfter(_ action: Machine.Action) -> UInt64?? {
        if case .readStore(let after) = action { return .some(after?.rawValue) }
        return nil
    }

    @Test("committed rows go out in id order past the cursor, which moves; rows at or below it are not written again")
    func committedRowsPastTheCursor() {
        var machine = Machine(readBatch: 256)
        #expect(write(machine.received(Work(committed: rows(1, 2)))) == Written(stored: [1, 2]))
        #expect(machine.cursor == MessageID(2))
        #expect(write(machine.received(Work(committed: rows(2, 3)))) == Written(stored: [3]))
        #expect(isNext(machine.received(Work(committed: rows(1, 3)))), "nothing new: take the next work")
        #expect(machine.cursor == MessageID(3))
    }

    @Test("stored rows before time-to-live-0 messages in the same batch")
    func storedBeforeTransient() {
        var machine = Machine(readBatch: 256)
        let action = machine.received(Work(committed: rows(5), transient: transient(9)))
        #expect(write(action) == Written(stored: [5], transient: [9]))
    }

    @Test("a heartbeat only when the batch has nothing else")
    func heartbeatOnlyAlone() {
        var machine = Machine(readBatch: 256)
        #expect(write(machine.received(Work(heartbeat: true))) == Written(heartbeat: true))
        #expect(write(machine.received(Work(committed: rows(1), heartbeat: true))) == Written(stored: [1]))
        #expect(write(machine.received(Work(heartbeat: true, transient: transient(4)))) == Written(transient: [4]))
        // Rows the stream already wrote do not count as something to write.
        #expect(write(machine.received(Work(committed: rows(1), heartbeat: true))) == Written(heartbeat: true))
        #expect(isNext(machine.received(Work())))
    }

    @Test("the backlog: the store is read after the cursor, then its rows and the carried work go out, then streaming")
    func backlogThenStreaming() {
        var machine = Machine(readBatch: 256)
        let read = machine.received(Work(readStore: true, committed: rows(11, 12), heartbeat: true, transient: transient(20)))
        #expect(readAfter(read) == .some(nil), "no cursor yet: from the start")
        // Row 11 was committed before the read and is in it: written once.
        #expect(write(machine.storeRead(rows(10, 11))) == Written(stored: [10, 11, 12], transient: [20]))
        #expect(machine.cursor == MessageID(12))
        #expect(write(machine.received(Work(committed: rows(13)))) == Written(stored: [13]))
        #expect(readAfter(machine.received(Work(readStore: true))) == .some(13), "a later read starts after the cursor")
    }

    @Test("a full page is written and the next read starts after it; carried work waits for the last page")
    func pagedStoreRead() {
        var machine = Machine(readBatch: 2)
        #expect(readAfter(machine.received(Work(readStore: true, committed: rows(5), transient: transient(30)))) == .some(nil))
        guard case .writeThenRead(let first, let after) = machine.storeRead(rows(1, 2)) else {
            Issue.record("a full page must be followed by another read")
            return
        }
        #expect(written(first) == Written(stored: [1, 2]))
        #expect(after == MessageID(2))
        guard case .writeThenRead(let second, let afterSecond) = machine.storeRead(rows(3, 4)) else {
            Issue.record("a full page must be followed by another read")
            return
        }
        #expect(written(second) == Written(stored: [3, 4]))
        #expect(afterSecond == MessageID(4))
        #expect(write(machine.storeRead(rows(5))) == Written(stored: [5], transient: [30]))
        #expect(write(machine.received(Work(committed: rows(6)))) == Written(stored: [6]), "streaming again")
    }

    @Test("an empty read with nothing carried writes nothing; a carried heartbeat is written alone")
    func emptyRead() {
        var machine = Machine(readBatch: 256)
        _ = machine.received(Work(readStore: true))
        #expect(isNext(machine.storeRead([])))
        _ = machine.received(Work(readStore: true, heartbeat: true))
        #expect(write(machine.storeRead([])) == Written(heartbeat: true))
    }

    @Test("work that arrives during a store read is kept for after it")
    func workDuringARead() {
        var machine = Machine(readBatch: 256)
        _ = machine.received(Work(readStore: true))
        #expect(isNone(machine.received(Work(committed: rows(7), transient: transient(40)))))
        #expect(write(machine.storeRead(rows(6))) == Written(stored: [6, 7], transient: [40]))
    }

    @Test("the end: finish once, then nothing for any input")
    func endsOnce() {
        var machine = Machine(readBatch: 256)
        #expect(isFinish(machine.end()))
        #expect(machine.hasEnded)
        #expect(isNone(machine.end()))
        #expect(isNone(machine.received(Work(committed: rows(1)))))
        #expect(isNone(machine.writeFailed()))
        #expect(isNone(machine.storeRead(rows(1))))
        #expect(machine.cursor == nil, "nothing was handed out after the end")
    }

    @Test("a failed write or store read finishes the stream; a read that returns after the end is dropped")
    func failures() {
        var writing = Machine(readBatch: 256)
        _ = writing.received(Work(committed: rows(1)))
        #expect(isFinish(writing.writeFailed()))

        var reading = Machine(readBatch: 256)
        _ = reading.received(Work(readStore: true))
        #expect(isFinish(reading.storeReadFailed()))

        var closed = Machine(readBatch: 256)
        _ = closed.received(Work(readStore: true))
        #expect(isFinish(closed.end()), "the peer left while the store was read")
        #expect(isNone(closed.storeRead(rows(1, 2))))
    }
}
