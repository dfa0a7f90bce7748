import Foundation
import PushRelayCore
import PushRelayStore
import Testing

@testable import PushRelayServer

/// The hand-over from the store's commit observer to live streams: committed rows reach the device's stream as
/// they are, a slow stream falls back to reading the store, and nothing reaches a device without a stream.
@Suite("Delivery hub")
struct DeliveryHubTests {
    private func row(_ id: Int64, device: DeviceID, body: [UInt8] = [1]) -> StoredMessage {
        StoredMessage(
            id: MessageID(rawValue: id), device: device, kind: .message, body: body, collapseKey: nil,
            expiresAt: Date(timeIntervalSinceNow: 60)
        )
    }

    @Test("committed rows reach their own device's stream, in order, without a store read")
    func handOver() {
        let hub = DeliveryHub()
        let a = DeviceID(rawValue: 1)
        let b = DeviceID(rawValue: 2)
        let (streamA, _) = hub.attach(device: a)
        let (streamB, _) = hub.attach(device: b)
        // The first work of a new stream is the backlog read.
        #expect(streamA.takeWork().readStore)
        #expect(streamB.takeWork().readStore)

        hub.deliver([row(10, device: a, body: [1]), row(11, device: b, body: [2]), row(12, device: a, body: [3])])
        let workA = streamA.takeWork()
        #expect(!workA.readStore)
        #expect(workA.committed.map(\.id.rawValue) == [10, 12])
        #expect(workA.committed.map(\.body) == [[1], [3]])
        #expect(streamB.takeWork().committed.map(\.id.rawValue) == [11])
        // Taken means cleared.
        #expect(streamA.takeWork().committed.isEmpty)
    }

    @Test("a stream more than committedLimit rows behind reads the store instead; a pending read covers new rows")
    func slowStreamFallsBackToTheStore() {
        let hub = DeliveryHub()
        let device = DeviceID(rawValue: 7)
        let (stream, _) = hub.attach(device: device)
        _ = stream.takeWork()
        let limit = DeliveryHub.Subscription.committedLimit
        hub.deliver((0..<Int64(limit)).map { row(100 + $0, device: device) })
        hub.deliver([row(100 + Int64(limit), device: device)])
        var work = stream.takeWork()
        #expect(work.readStore)
        #expect(work.committed.isEmpty)

        // While a read is pending, rows are not kept: the read will find them.
        hub.deliver([row(5_000, device: device)])
        hub.wake(devices: [device])
        hub.deliver([row(5_001, device: device)])
        work = stream.takeWork()
        #expect(work.readStore)
        #expect(work.committed.isEmpty)
    }

    @Test("rows for devices without a stream here, or whose stream was replaced, go nowhere")
    func noStream() {
        let hub = DeliveryHub()
        let device = DeviceID(rawValue: 3)
        hub.deliver([row(1, device: device)])  // no stream: nothing to do, nothing kept
        let (old, _) = hub.attach(device: device)
        let (new, newDevice) = hub.attach(device: device)
        #expect(!newDevice)
        _ = old.takeWork()
        _ = new.takeWork()
        hub.deliver([row(2, device: device)])
        #expect(old.takeWork().committed.isEmpty)
        #expect(new.takeWork().committed.map(\.id.rawValue) == [2])
        #expect(hub.detach(new))
        hub.deliver([row(3, device: device)])
        #expect(new.takeWork().committed.isEmpty)
    }
}
