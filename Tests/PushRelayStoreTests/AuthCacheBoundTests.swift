import Foundation
import PushRelayCore
import Testing
@testable import PushRelayStore

/// ``AuthCache``'s bound: a full cache makes room in its largest table, and keeps the rest.
@Suite("Store: the bounds of the authentication and queue-state caches")
struct AuthCacheBoundTests {
    private let project = Project(id: ProjectID(rawValue: 7), name: "shop", senderID: 123_456_789_01, createdAt: Date())
    private let registeredAt = Date(timeIntervalSince1970: 1_700_000_000)

    private func device(_ index: Int) -> Device {
        Device(
            id: DeviceID(rawValue: Int64(index)), project: project.id, token: "token-\(index)", app: "com.shop",
            platform: "IOS", registeredAt: registeredAt)
    }

    @Test("many more devices than it holds: the count stays bounded, the server key and the newest devices stay")
    func fullCacheDropsDevicesNotKeys() {
        let cache = AuthCache(maxEntries: 100)
        #expect(cache.epochCheckDue(interval: .seconds(60)))
        cache.observe(epoch: 0)
        cache.insertServerKey(
            KeyHash(of: "server-key"), AuthCache.ServerKeyEntry(project: project, validUntil: nil),
            generation: cache.generation)
        for index in 0..<1000 {
            cache.insertDevice(device(index), secret: KeyHash(of: "secret-\(index)"), generation: cache.generation)
            #expect(cache.count <= 101, "bounded: one device (two entries) at most past the limit")
        }
        #expect(cache.cachedProject(serverKey: "server-key", recheckInterval: .seconds(60), nowMicros: 0) == project)
        #expect(cache.cachedDevice(secret: "secret-999", recheckInterval: .seconds(60)) == device(999))
        #expect(cache.cachedDevices(tokens: ["token-999"], recheckInterval: .seconds(60)) == [device(999)])
        // Full of devices, it still holds most of its room: it drops a part, not everything.
        #expect(cache.count >= 90)
    }

    @Test("a full cache of server keys makes room among them for a new one")
    func fullOfKeys() {
        let cache = AuthCache(maxEntries: 64)
        #expect(cache.epochCheckDue(interval: .seconds(60)))
        cache.observe(epoch: 0)
        for index in 0..<200 {
            cache.insertServerKey(
                KeyHash(of: "key-\(index)"), AuthCache.ServerKeyEntry(project: project, validUntil: nil),
                generation: cache.generation)
        }
        #expect(cache.count <= 64)
        #expect(cache.cachedProject(serverKey: "key-199", recheckInterval: .seconds(60), nowMicros: 0) == project)
    }

    @Test("the writer's queue-state cache, full, drops a part of itself and keeps the rest")
    func queueStates() {
        let cache = QueueStateCache(maxEntries: 64)
        let entry = QueueStateCache.Entry(
            machine: QueuePolicy.Machine(policy: QueuePolicy(), state: QueuePolicy.State()), validUntil: .max)
        for index in 0..<200 {
            cache.set(entry, for: DeviceID(rawValue: Int64(index)))
            #expect(cache.count <= 64)
        }
        #expect(cache.entry(for: DeviceID(rawValue: 199), nowMicros: 0) != nil)
        // Starting over when full left a handful.
        #expect(cache.count >= 60)
    }
}
