import Foundation
import NIOConcurrencyHelpers
import PushRelayCore
import PushRelayStore
import Testing

@testable import PushRelayServer

/// The hand-over from the store's commit observer to live streams: committed rows reach the device's stream as
/// they are, a slow stream falls back to reading the store, nothing reaches a device without a stream, and a
/// stream is woken once per idle period (never twice while it runs, never missed).
@Suite("Delivery hub")
struct DeliveryHubTests {
    private func row(_ id: Int64, device: DeviceID, body: [UInt8] = [1]) -> StoredMessage {
        StoredMessage(
            id: MessageID(rawValue: id), device: device, kind: .message, body: body, collapseKey: nil,
            expiresAt: Date(timeIntervalSinceNow: 60)
        )
    }

    /// Counts wake-ups.
    private final class Wakes: Sendable {
        private let count = NIOLockedValueBox(0)
        var value: Int { count.withLockedValue { $0 } }
        func wake() { count.withLockedValue { $0 += 1 } }
    }

    private func work(_ subscription: DeliveryHub.Subscription) -> DeliveryHub.Subscription.Work? {
        if case .work(let work) = subscription.next() { return work }
        return nil
    }

    private func isIdle(_ subscription: DeliveryHub.Subscription) -> Bool {
        if case .idle = subscription.next() { return true }
        return false
    }

    private func isEnded(_ subscription: DeliveryHub.Subscription) -> Bool {
        if case .ended = subscription.next() { return true }
        return false
    }

    /// Two nodes on one database: each announces its stream, and every node sees the announcements in one order.
    /// The stream announced first ends when the other's announcement reaches its node; the other stays.
    @Test("a stream opened on another node ends the one here only if this one's announcement came back first")
    func openedElsewhereEndsOnlyTheOlderStream() {
        let device = DeviceID(rawValue: 7)
        // Here first: our announcement comes back, then the other node's: ours is the older one, it ends.
        let older = DeliveryHub()
        let (here, _) = older.attach(device: device) {}
        older.announced(device: device, attachment: here.attachment)
        #expect(older.openedElsewhere(device: device))
        #expect(isEnded(here))

        // The other node first: its announcement reaches us before ours comes back: ours is the newer one, it stays,
        // and ending it later is the other node's business, not a second announcement's from elsewhere.
        let newer = DeliveryHub()
        let (stays, _) = newer.attach(device: device) {}
        #expect(work(stays)?.readStore == true)
        #expect(!newer.openedElsewhere(device: device))
        newer.announced(device: device, attachment: stays.attachment)
        #expect(isIdle(stays), "not ended")

        // An echo of a stream already replaced here marks nothing: the newer local stream waits for its own.
        let replaced = DeliveryHub()
        let (first, _) = replaced.attach(device: device) {}
        let (second, _) = replaced.attach(device: device) {}
        #expect(isEnded(first))
        replaced.announced(device: device, attachment: first.attachment)
        #expect(!replaced.openedElsewhere(device: device))
        #expect(work(second)?.readStore == true)
        replaced.announced(device: device, attachment: second.attachment)
        #expect(replaced.openedElsewhere(device: device))
        #expect(isEnded(second))
        // No stream of the device: nothing to end.
        #expect(!DeliveryHub().openedElsewhere(device: device))
    }

    @Test("streaming(among:) names the devices with a stream here, in the order asked, and forgets a detached one")
    func streamingAmong() {
        let hub = DeliveryHub()
        let (a, b, c) = (DeviceID(rawValue: 1), DeviceID(rawValue: 2), DeviceID(rawValue: 3))
        let (streamA, _) = hub.attach(device: a) {}
        _ = hub.attach(device: c) {}
        #expect(hub.streaming(among: [c, b, a]) == [c, a])
        hub.detach(streamA)
        #expect(hub.streaming(among: [a, b, c]) == [c])
        #expect(hub.streaming(among: [b]).isEmpty)
    }

    @Test("committed rows reach their own device's stream, in order, without a store read")
    func handOver() {
        let hub = DeliveryHub()
        let a = DeviceID(rawValue: 1)
        let b = DeviceID(rawValue: 2)
        let (streamA, _) = hub.attach(device: a) {}
        let (streamB, _) = hub.attach(device: b) {}
        // The first work of a new stream is the backlog read.
        #expect(work(streamA)?.readStore == true)
        #expect(work(streamB)?.readStore == true)

        hub.deliver([row(10, device: a, body: [1]), row(11, device: b, body: [2]), row(12, device: a, body: [3])])
        let workA = work(streamA)
        #expect(workA?.readStore == false)
        #expect(workA?.committed.map(\.id.rawValue) == [10, 12])
        #expect(workA?.committed.map(\.body) == [[1], [3]])
        #expect(work(streamB)?.committed.map(\.id.rawValue) == [11])
        // Taken means cleared.
        #expect(isIdle(streamA))
    }

    @Test("a stream is woken when work arrives while it is idle, and not again while it runs")
    func wakeUps() {
        let hub = DeliveryHub()
        let device = DeviceID(rawValue: 9)
        let wakes = Wakes()
        let (stream, _) = hub.attach(device: device) { wakes.wake() }
        #expect(wakes.value == 1)  // the backlog read
        hub.deliver([row(1, device: device)])
        #expect(wakes.value == 1)  // still running: no second wake-up
        let first = work(stream)
        #expect(first?.readStore == true)
        #expect(first?.committed.isEmpty == true)  // the backlog read to come finds row 1
        #expect(isIdle(stream))
        hub.deliver([row(2, device: device)])
        #expect(wakes.value == 2)
        hub.heartbeat()
        #expect(wakes.value == 2)
        let next = work(stream)
        #expect(next?.committed.count == 1 && next?.heartbeat == true)
        #expect(isIdle(stream))
        // Ending wakes an idle stream, which then sees the end.
        #expect(hub.detach(stream))
        #expect(wakes.value == 3)
        #expect(isEnded(stream))
        hub.deliver([row(3, device: device)])
        #expect(wakes.value == 3)
    }

    @Test("a stream more than committedLimit rows behind reads the store instead; a pending read covers new rows")
    func slowStreamFallsBackToTheStore() {
        let hub = DeliveryHub()
        let device = DeviceID(rawValue: 7)
        let (stream, _) = hub.attach(device: device) {}
        _ = work(stream)
        let limit = DeliveryHub.Subscription.committedLimit
        hub.deliver((0..<Int64(limit)).map { row(100 + $0, device: device) })
        hub.deliver([row(100 + Int64(limit), device: device)])
        var next = work(stream)
        #expect(next?.readStore == true)
        #expect(next?.committed.isEmpty == true)

        // While a read is pending, rows are not kept: the read will find them.
        hub.deliver([row(5_000, device: device)])
        hub.wake(devices: [device])
        hub.deliver([row(5_001, device: device)])
        next = work(stream)
        #expect(next?.readStore == true)
        #expect(next?.committed.isEmpty == true)
    }

    @Test("rows for devices without a stream here, or whose stream was replaced, go nowhere")
    func noStream() {
        let hub = DeliveryHub()
        let device = DeviceID(rawValue: 3)
        hub.deliver([row(1, device: device)])  // no stream: nothing to do, nothing kept
        let (old, _) = hub.attach(device: device) {}
        let (new, newDevice) = hub.attach(device: device) {}
        #expect(!newDevice)
        #expect(isEnded(old))
        _ = work(new)
        hub.deliver([row(2, device: device)])
        #expect(isEnded(old))
        #expect(work(new)?.committed.map(\.id.rawValue) == [2])
        #expect(hub.detach(new))
        hub.deliver([row(3, device: device)])
        #expect(isEnded(new))
    }

    @Test("ending removed devices ends their streams only, which then leave the registry as they detach")
    func endRemovedDevices() {
        let hub = DeliveryHub()
        let (gone, _) = hub.attach(device: DeviceID(rawValue: 1)) {}
        let (kept, _) = hub.attach(device: DeviceID(rawValue: 2)) {}
        hub.end(devices: [DeviceID(rawValue: 1), DeviceID(rawValue: 3)])
        #expect(isEnded(gone))
        #expect(!isEnded(kept))
        #expect(hub.detach(gone))
        #expect(hub.connectedDeviceIDs == [DeviceID(rawValue: 2)])
    }

    @Test("a draining hub ends every stream and refuses new ones")
    func drain() {
        let hub = DeliveryHub()
        let (stream, _) = hub.attach(device: DeviceID(rawValue: 4)) {}
        hub.drain()
        #expect(isEnded(stream))
        let (late, newDevice) = hub.attach(device: DeviceID(rawValue: 5)) {}
        #expect(!newDevice)
        #expect(isEnded(late))
    }
}
