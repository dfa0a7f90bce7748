import Foundation
import PushRelayCore
import Testing
import TestSupport
import NIOConcurrencyHelpers
@testable import PushRelayStore

@Suite("Store: devices")
struct DeviceStoreTests {
    @Test("register returns an FCM-like token and a secret that authenticates", arguments: StoreKind.allCases)
    func register(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                let device = fixture.registration.device
                let parts = device.token.split(separator: ":", maxSplits: 1)
                #expect(parts.count == 2 && parts[0].count == 22 && parts[1].hasPrefix("APA91b"))
                #expect(parts[1].count - 6 >= 22)  // ≥ 128 bits of base64url after the prefix
                #expect(fixture.registration.secret.hasPrefix("prd_") && fixture.registration.secret.count >= 43)
                #expect(device.project == fixture.project && device.app == "com.shop" && device.platform == "IOS")
                #expect(try await store.authenticateDevice(secret: fixture.registration.secret) == device)
                #expect(try await store.authenticateDevice(secret: "wrong") == nil)
                let second = try await store.registerDevice(project: fixture.project, app: "com.shop", platform: "IOS")
                #expect(second.device.token != device.token && second.secret != fixture.registration.secret)
            }
        }
    }

    @Test("resolve keeps request order, nil for unknown tokens", arguments: StoreKind.allCases)
    func resolve(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                let other = try await store.registerDevice(project: fixture.project, app: "x", platform: "ANDROID")
                let tokens = [other.device.token, "unknown", fixture.registration.device.token]
                let resolved = try await store.resolveTokens(tokens)
                #expect(resolved == [other.device, nil, fixture.registration.device])
                // Again, from the cache.
                #expect(try await store.resolveTokens(tokens) == resolved)
            }
        }
    }

    @Test("unregister by secret removes the device, its queue and its subscriptions", arguments: StoreKind.allCases)
    func unregister(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                let token = fixture.registration.device.token
                _ = try await store.resolveTokens([token])  // warm the cache
                _ = try await store.authenticateDevice(secret: fixture.registration.secret)
                _ = try await store.enqueue([NewMessage(device: fixture.device, body: [1])])
                _ = try await store.subscribe(tokens: [token], to: "news", project: fixture.project)
                #expect(try await store.unregisterDevice(secret: "wrong") == nil)
                #expect(try await store.unregisterDevice(secret: fixture.registration.secret) == fixture.registration.device)
                #expect(try await store.resolveTokens([token]) == [nil])
                #expect(try await store.authenticateDevice(secret: fixture.registration.secret) == nil)
                #expect(try await store.subscribe(tokens: [token], to: "news", project: fixture.project) == [.notFound])
                #expect(try await store.enqueue([NewMessage(device: fixture.device, body: [1])]) == [.deviceNotFound])
                let statistics = try await store.queueStatistics()
                #expect(statistics.storedMessages == 0 && statistics.devices == 0)
            }
        }
    }

    @Test("registering for an unknown project fails with notFound", arguments: StoreKind.allCases)
    func unknownProject(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                do {
                    _ = try await store.registerDevice(project: ProjectID(rawValue: 42), app: "a", platform: "IOS")
                    Issue.record("registered a device for a missing project")
                } catch let error as StoreError {
                    #expect(error.code == .notFound)
                }
            }
        }
    }

    @Test("a project's device limit: past it registration throws resourceExhausted and writes nothing; unregistering makes room", arguments: StoreKind.allCases)
    func deviceLimit(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let shop = try await store.createProject(name: "shop")
                let news = try await store.createProject(name: "news")
                let first = try await store.registerDevice(project: shop.project.id, app: "a", platform: "IOS", deviceLimit: 2)
                _ = try await store.registerDevice(project: shop.project.id, app: "a", platform: "IOS", deviceLimit: 2)
                let refused = await #expect(throws: StoreError.self) {
                    try await store.registerDevice(project: shop.project.id, app: "a", platform: "IOS", deviceLimit: 2)
                }
                #expect(refused?.code == .resourceExhausted)
                #expect(try await store.queueStatistics().devices == 2)
                // Another project has its own count; no limit is no limit.
                _ = try await store.registerDevice(project: news.project.id, app: "a", platform: "IOS", deviceLimit: 2)
                _ = try await store.registerDevice(project: shop.project.id, app: "a", platform: "IOS")
                #expect(try await store.unregisterDevice(secret: first.secret) != nil)
                // 2 left in shop (one over the limit, registered without it): still no room under a limit of 2.
                await #expect(throws: StoreError.self) {
                    try await store.registerDevice(project: shop.project.id, app: "a", platform: "IOS", deviceLimit: 2)
                }
                _ = try await store.registerDevice(project: shop.project.id, app: "a", platform: "IOS", deviceLimit: 3)
                let unknown = await #expect(throws: StoreError.self) {
                    try await store.registerDevice(project: ProjectID(rawValue: 9999), app: "a", platform: "IOS", deviceLimit: 2)
                }
                #expect(unknown?.code == .notFound)
            }
        }
    }

    @Test("existingDevices keeps the devices that exist: not unregistered, not gone with their project", arguments: StoreKind.allCases)
    func existingDevices(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let shop = try await store.createProject(name: "shop")
                let news = try await store.createProject(name: "news")
                let kept = try await store.registerDevice(project: shop.project.id, app: "a", platform: "IOS")
                let unregistered = try await store.registerDevice(project: shop.project.id, app: "a", platform: "IOS")
                let deleted = try await store.registerDevice(project: news.project.id, app: "a", platform: "IOS")
                var many = (0..<1_200).map { DeviceID(rawValue: 1_000_000 + Int64($0)) }  // past one chunk of ids
                many.append(contentsOf: [kept, unregistered, deleted].map(\.device.id))
                #expect(try await store.existingDevices(many) == Set([kept, unregistered, deleted].map(\.device.id)))
                _ = try await store.unregisterDevice(secret: unregistered.secret)
                #expect(try await store.deleteProject(named: "news"))
                #expect(try await store.existingDevices(many) == [kept.device.id])
                #expect(try await store.existingDevices([]).isEmpty)
            }
        }
    }

    @Test("devices unseen for the expiry are removed with their queues; seen ones stay; the project's count follows", arguments: StoreKind.allCases)
    func deviceExpiry(kind: StoreKind) async throws {
        let clock = FakeClock()
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory, clock: clock) { store in
                let shop = try await store.createProject(name: "shop")
                let register = { try await store.registerDevice(project: shop.project.id, app: "a", platform: "IOS") }
                let (quiet, seen, other) = (try await register(), try await register(), try await register())
                _ = try await store.enqueue([NewMessage(device: quiet.device.id, body: [1], timeToLive: .seconds(3600))])
                let dropped = NIOLockedValueBox(DroppedMessages())
                store.setDropObserver { drops in dropped.withLockedValue { $0.unregistered += drops.unregistered } }
                clock.advance(by: 100)
                try await store.recordDevicesSeen([seen.device.id])
                clock.advance(by: 20)
                #expect(try await store.expireDevices(unseenFor: .seconds(150), limit: 100) == 0, "nothing that old")
                #expect(try await store.expireDevices(unseenFor: .seconds(50), limit: 1) == 1, "the limit holds")
                #expect(try await store.expireDevices(unseenFor: .seconds(50), limit: 100) == 1)
                let tokens = [quiet, seen, other].map(\.device.token)
                #expect(try await store.resolveTokens(tokens).map { $0 != nil } == [false, true, false])
                #expect(try await store.authenticateDevice(secret: quiet.secret) == nil)
                #expect(try await store.pendingMessages(for: quiet.device.id, after: nil, limit: 10).isEmpty)
                #expect(dropped.withLockedValue { $0.unregistered } == 1, "the quiet device's pending message")
                // One device left: a limit of 2 has room for one more, not two.
                _ = try await store.registerDevice(project: shop.project.id, app: "a", platform: "IOS", deviceLimit: 2)
                await #expect(throws: StoreError.self) {
                    try await store.registerDevice(project: shop.project.id, app: "a", platform: "IOS", deviceLimit: 2)
                }
            }
        }
    }

    @Test("an unregistration drops only that device from the cache; a change by another process still clears it all")
    func unregisterEvictsOnlyItsDevice() async throws {
        try await withTemporaryDirectory { directory in
            // The cache answers only within `authRecheckInterval` of an epoch check: an hour here, so that what the
            // test reads from memory does not depend on how fast a loaded host runs it (250 ms, the default, was
            // too short under AddressSanitizer in a full run). What clears it below is the unregistration's write.
            var configuration = SQLiteStore.Configuration(directory: directory)
            configuration.authRecheckInterval = .seconds(3600)
            let store = try SQLiteStore(configuration: configuration)
            let shop = try await store.createProject(name: "shop")
            let kept = try await store.registerDevice(project: shop.project.id, app: "a", platform: "IOS")
            let gone = try await store.registerDevice(project: shop.project.id, app: "a", platform: "IOS")
            // Fill the cache: the server key, both devices by token and by secret.
            _ = try await store.authenticateServerKey(shop.serverKey)
            _ = try await store.resolveTokens([kept.device.token, gone.device.token])
            _ = try await store.authenticateDevice(secret: kept.secret)
            #expect(store.cachedDevices(tokens: [kept.device.token, gone.device.token]) != nil)
            #expect(try await store.unregisterDevice(secret: gone.secret) != nil)
            // The rest stays in memory: sends to other devices keep the event-loop path.
            #expect(try await store.authenticateServerKey(shop.serverKey) != nil)
            #expect(store.cachedDevices(tokens: [kept.device.token]) == [kept.device])
            #expect(store.cachedProject(serverKey: shop.serverKey)?.id == shop.project.id)
            #expect(store.cachedDevices(tokens: [gone.device.token]) == nil)
            #expect(try await store.resolveTokens([gone.device.token]) == [nil])
            #expect(try await store.authenticateDevice(secret: gone.secret) == nil)
            #expect(try await store.authenticateDevice(secret: kept.secret) == kept.device)

            // Another process (the CLI) rotates the key meanwhile: the next unregistration here cannot tell what
            // that changed, and clears everything.
            let cli = try SQLiteStore(configuration: SQLiteStore.Configuration(directory: directory))
            _ = try await cli.rotateServerKey(project: "shop", gracePeriod: .zero)
            await cli.close()
            let third = try await store.registerDevice(project: shop.project.id, app: "a", platform: "IOS")
            #expect(try await store.unregisterDevice(secret: third.secret) != nil)
            #expect(try await store.authenticateServerKey(shop.serverKey) == nil, "rotated away with no grace")
            #expect(store.cachedDevices(tokens: [kept.device.token]) == nil, "cleared, not evicted")
            await store.close()
        }
    }

    @Test("a device found by its secret is cached by its token too: its next send is served from memory", arguments: StoreKind.allCases)
    func secretLookUpCachesTheToken(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            // An hour between epoch checks: what the test reads from memory does not depend on the host's speed.
            try await withStore(kind, in: directory, configure: { $0.authRecheckInterval = .seconds(3600) }) { store in
                let fixture = try await makeFixture(store)
                let device = fixture.registration.device
                _ = try await store.authenticateServerKey(fixture.credentials.serverKey)
                #expect(store.cachedDevices(tokens: [device.token]) == nil, "nothing looked the token up yet")
                #expect(try await store.authenticateDevice(secret: fixture.registration.secret) == device)
                #expect(store.cachedDevices(tokens: [device.token]) == [device])
                // Unregistered, it leaves both tables.
                #expect(try await store.unregisterDevice(secret: fixture.registration.secret) != nil)
                #expect(store.cachedDevices(tokens: [device.token]) == nil)
                #expect(try await store.resolveTokens([device.token]) == [nil])
            }
        }
    }

    @Test("a full authentication cache keeps its server key while devices come and go", arguments: StoreKind.allCases)
    func fullCacheKeepsTheServerKey(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory, configure: {
                $0.authRecheckInterval = .seconds(3600)
                $0.authCacheEntries = 16
            }) { store in
                let fixture = try await makeFixture(store)
                #expect(try await store.authenticateServerKey(fixture.credentials.serverKey) != nil)
                var last = fixture.registration
                for _ in 0..<24 {
                    last = try await store.registerDevice(project: fixture.credentials.project.id, app: "a", platform: "IOS")
                    #expect(try await store.authenticateDevice(secret: last.secret) == last.device)
                }
                // Starting over when full (as it did) dropped the key too, and every send read the store again.
                #expect(store.cachedProject(serverKey: fixture.credentials.serverKey)?.id == fixture.credentials.project.id)
                #expect(store.cachedDevices(tokens: [last.device.token]) == [last.device])
            }
        }
    }

    /// PostgreSQL, two nodes: an unregistration on one node makes the other drop just that device from its cache
    /// (the notification names it); the rest of that node's cache stays, so its sends keep the event-loop path.
    @Test("PostgreSQL: an unregistration on one node drops only that device from another node's cache")
    func unregisterEvictsOnlyItsDeviceOnEveryNode() async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(.postgres, in: directory) { nodeA in
                let shop = try await nodeA.createProject(name: "shop")
                let kept = try await nodeA.registerDevice(project: shop.project.id, app: "a", platform: "IOS")
                let gone = try await nodeA.registerDevice(project: shop.project.id, app: "a", platform: "IOS")
                // Node B re-reads the epoch only every 10 s here: what changes its cache is the notification.
                try await withStore(.postgres, in: directory, configure: { $0.authRecheckInterval = .seconds(10) }) {
                    nodeB in
                    _ = try await nodeB.authenticateServerKey(shop.serverKey)
                    _ = try await nodeB.resolveTokens([kept.device.token, gone.device.token])
                    #expect(nodeB.cachedDevices(tokens: [kept.device.token, gone.device.token]) != nil)
                    #expect(try await nodeA.unregisterDevice(secret: gone.secret) != nil)
                    let deadline = ContinuousClock.now + .seconds(5)
                    while nodeB.cachedDevices(tokens: [gone.device.token]) != nil, ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(5))
                    }
                    #expect(nodeB.cachedDevices(tokens: [gone.device.token]) == nil, "the removed device is dropped")
                    #expect(nodeB.cachedDevices(tokens: [kept.device.token]) == [kept.device], "the rest stays")
                    #expect(nodeB.cachedProject(serverKey: shop.serverKey)?.id == shop.project.id)
                    #expect(try await nodeB.resolveTokens([gone.device.token]) == [nil])
                    // A key rotation on node A still clears node B's cache.
                    _ = try await nodeA.rotateServerKey(project: "shop", gracePeriod: .zero)
                    let cleared = ContinuousClock.now + .seconds(5)
                    while nodeB.cachedDevices(tokens: [kept.device.token]) != nil, ContinuousClock.now < cleared {
                        try await Task.sleep(for: .milliseconds(5))
                    }
                    #expect(nodeB.cachedDevices(tokens: [kept.device.token]) == nil, "cleared by the rotation")
                }
            }
        }
    }

    @Test("the database files never contain a key or secret in clear", arguments: StoreKind.allCases)
    func noPlaintextCredentials(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            var secrets: [String] = []
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                let rotated = try await store.rotateServerKey(project: "shop")
                secrets = [fixture.credentials.serverKey, fixture.credentials.clientKey, fixture.registration.secret, rotated]
                // The token is public and stored in clear: it proves the search below works.
                secrets.append(fixture.registration.device.token)
            }
            var bytes: [UInt8] = []
            switch kind {
            case .sqlite:
                for file in try FileManager.default.contentsOfDirectory(atPath: directory) {
                    bytes += Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + file)))
                }
            case .postgres:
                // Every table's rows as text (bytea in hex and escape forms would hide nothing: the search is for
                // the clear text).
                bytes = Array(try await TestPostgres.shared.dump(database: databaseName(for: directory)).utf8)
            }
            let haystack = String(decoding: bytes.map { $0 == 0 ? 1 : $0 }, as: UTF8.self)
            #expect(haystack.contains(secrets.removeLast()))
            for secret in secrets {
                #expect(!haystack.contains(secret))
                #expect(!haystack.contains(String(secret.suffix(24))))
            }
        }
    }
}
