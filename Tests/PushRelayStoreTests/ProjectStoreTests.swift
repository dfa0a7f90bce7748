import Foundation
import PushRelayCore
import Testing
@testable import PushRelayStore

@Suite("Store: projects and keys")
struct ProjectStoreTests {
    @Test("create returns an 11-digit sender id and keys that authenticate", arguments: StoreKind.allCases)
    func createAndAuthenticate(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let created = try await store.createProject(name: "shop")
                #expect(created.project.name == "shop")
                #expect(String(created.project.senderID).count == 11)
                #expect(created.serverKey.hasPrefix("AAAA") && created.serverKey.contains(":APA91b"))
                #expect(created.clientKey.hasPrefix("AIza") && created.clientKey.count == 39)
                #expect(try await store.authenticateServerKey(created.serverKey) == created.project)
                #expect(try await store.authenticateServerKey(created.serverKey + "x") == nil)
                #expect(try await store.authenticateServerKey(created.clientKey) == nil)
                #expect(try await store.authenticateClientKey(created.clientKey, project: "shop") == created.project)
                #expect(try await store.authenticateClientKey(created.serverKey, project: "shop") == nil)
                #expect(try await store.authenticateClientKey(created.clientKey, project: "other") == nil)
                #expect(try await store.project(named: "shop") == created.project)
                #expect(try await store.project(id: created.project.id) == created.project)
            }
        }
    }

    @Test("names are unique, non-empty; list is by name", arguments: StoreKind.allCases)
    func namesAndList(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let b = try await store.createProject(name: "b")
                let a = try await store.createProject(name: "a")
                #expect(a.project.senderID != b.project.senderID)
                await #expect(throws: StoreError.self) { try await store.createProject(name: "a") }
                do {
                    _ = try await store.createProject(name: "a")
                } catch let error as StoreError {
                    #expect(error.code == .alreadyExists)
                }
                // The name is the v1 project_id in request paths: nothing a path or an e-mail domain would break on.
                let refused = [
                    "", "a/b", "x?y", "my shop", "Shop%x", "-a", ".a", "a:b", "é", String(repeating: "p", count: 64),
                ]
                for name in refused {
                    do {
                        _ = try await store.createProject(name: name)
                        Issue.record("\(name) was accepted")
                    } catch let error as StoreError {
                        #expect(error.code == .invalidArgument, "\(name)")
                    }
                }
                for name in ["Shop-2_eu.prod", String(repeating: "p", count: 63)] {
                    _ = try await store.createProject(name: name)
                    #expect(try await store.deleteProject(named: name))
                }
                #expect(try await store.projects().map(\.name) == ["a", "b"])
            }
        }
    }

    @Test("rotation: the old key works during the grace period, not after; the new key works", arguments: StoreKind.allCases)
    func rotation(kind: StoreKind) async throws {
        let clock = FakeClock()
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory, clock: clock) { store in
                let created = try await store.createProject(name: "shop")
                #expect(try await store.authenticateServerKey(created.serverKey) != nil)  // cached now
                let newKey = try await store.rotateServerKey(project: "shop", gracePeriod: .seconds(3600))
                #expect(newKey != created.serverKey)
                #expect(try await store.authenticateServerKey(newKey) == created.project)
                #expect(try await store.authenticateServerKey(created.serverKey) == created.project)
                clock.advance(by: 3601)
                #expect(try await store.authenticateServerKey(created.serverKey) == nil)
                #expect(try await store.authenticateServerKey(newKey) == created.project)
                let report = try await store.purge(limit: 1000)
                #expect(report.expiredServerKeys == 1)
                do {
                    _ = try await store.rotateServerKey(project: "nope")
                    Issue.record("rotating an unknown project succeeded")
                } catch let error as StoreError {
                    #expect(error.code == .notFound)
                }
            }
        }
    }

    /// audit-j: `rotate-key --grace-seconds 9223372036855` cut the old key off at once (the end wrapped negative).
    @Test("a grace too long to count in microseconds keeps the old key valid", arguments: StoreKind.allCases)
    func graceBeyondTheClock(kind: StoreKind) async throws {
        let clock = FakeClock()
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory, clock: clock) { store in
                let created = try await store.createProject(name: "shop")
                _ = try await store.rotateServerKey(project: "shop", gracePeriod: .seconds(9_223_372_036_855))
                clock.advance(by: 10 * 365 * 86_400)
                #expect(try await store.authenticateServerKey(created.serverKey) == created.project)
            }
        }
    }

    @Test("a second rotation does not extend the first key's grace period", arguments: StoreKind.allCases)
    func secondRotationKeepsShorterGrace(kind: StoreKind) async throws {
        let clock = FakeClock()
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory, clock: clock) { store in
                let created = try await store.createProject(name: "shop")
                let second = try await store.rotateServerKey(project: "shop", gracePeriod: .seconds(100))
                clock.advance(by: 50)
                let third = try await store.rotateServerKey(project: "shop", gracePeriod: .seconds(1000))
                clock.advance(by: 60)
                #expect(try await store.authenticateServerKey(created.serverKey) == nil)
                #expect(try await store.authenticateServerKey(second) != nil)
                #expect(try await store.authenticateServerKey(third) != nil)
            }
        }
    }

    @Test("revoke-key ends the previous server keys' grace at once, even when cached; the current key stays", arguments: StoreKind.allCases)
    func revokePreviousServerKeys(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let created = try await store.createProject(name: "shop")
                let current = try await store.rotateServerKey(project: "shop", gracePeriod: .seconds(3600))
                #expect(try await store.authenticateServerKey(created.serverKey) == created.project)  // cached now
                #expect(try await store.revokePreviousServerKeys(project: "shop") == 1)
                #expect(try await store.authenticateServerKey(created.serverKey) == nil)
                #expect(try await store.authenticateServerKey(current) == created.project)
                #expect(try await store.revokePreviousServerKeys(project: "shop") == 0, "nothing left to revoke")
                await #expect(throws: StoreError.self) { try await store.revokePreviousServerKeys(project: "nope") }
            }
        }
    }

    @Test("rotate-client-key: the new key registers, the old one no longer does, registered devices keep working", arguments: StoreKind.allCases)
    func rotateClientKey(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                let oldKey = fixture.credentials.clientKey
                #expect(try await store.authenticateClientKey(oldKey, project: "shop") != nil)
                let newKey = try await store.rotateClientKey(project: "shop")
                #expect(newKey != oldKey)
                #expect(try await store.authenticateClientKey(oldKey, project: "shop") == nil)
                #expect(try await store.authenticateClientKey(newKey, project: "shop")?.name == "shop")
                #expect(try await store.authenticateDevice(secret: fixture.registration.secret) != nil)
                #expect(try await store.authenticateServerKey(fixture.credentials.serverKey) != nil, "server key untouched")
                await #expect(throws: StoreError.self) { try await store.rotateClientKey(project: "nope") }
            }
        }
    }

    @Test("delete cascades devices, messages and subscriptions", arguments: StoreKind.allCases)
    func deleteCascades(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let fixture = try await makeFixture(store)
                let other = try await makeFixture(store, name: "other")
                _ = try await store.enqueue([NewMessage(device: fixture.device, body: [1])])
                _ = try await store.subscribe(tokens: [fixture.registration.device.token], to: "news", project: fixture.project)
                #expect(try await store.resolveTokens([fixture.registration.device.token]) == [fixture.registration.device])
                #expect(try await store.deleteProject(named: "shop"))
                #expect(try await !store.deleteProject(named: "shop"))
                #expect(try await store.resolveTokens([fixture.registration.device.token]) == [nil])
                #expect(try await store.authenticateServerKey(fixture.credentials.serverKey) == nil)
                #expect(try await store.authenticateDevice(secret: fixture.registration.secret) == nil)
                #expect(try await store.pendingMessages(for: fixture.device, after: nil, limit: 10).isEmpty)
                #expect(try await store.subscriptions(of: fixture.device).isEmpty)
                #expect(try await store.enqueue([NewMessage(device: fixture.device, body: [1])]) == [.deviceNotFound])
                let statistics = try await store.queueStatistics()
                #expect(statistics.projects == 1 && statistics.devices == 1 && statistics.storedMessages == 0)
                #expect(try await store.authenticateServerKey(other.credentials.serverKey) != nil)
            }
        }
    }

    @Test("another process's changes are seen without restart (new project at once, deletion after the recheck)", arguments: StoreKind.allCases)
    func seesOtherProcessChanges(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory, configure: { $0.authRecheckInterval = .zero }) { daemon in
                try await withStore(kind, in: directory) { cli in
                    let created = try await cli.createProject(name: "late")
                    #expect(try await daemon.authenticateServerKey(created.serverKey) == created.project)
                    let device = try await daemon.registerDevice(project: created.project.id, app: "a", platform: "IOS")
                    #expect(try await daemon.authenticateDevice(secret: device.secret) == device.device)
                    #expect(try await daemon.resolveTokens([device.device.token]) == [device.device])
                    let rotated = try await cli.rotateServerKey(project: "late", gracePeriod: .zero)
                    #expect(try await daemon.authenticateServerKey(rotated) == created.project)
                    #expect(try await daemon.authenticateServerKey(created.serverKey) == nil)
                    #expect(try await cli.deleteProject(named: "late"))
                    #expect(try await daemon.authenticateServerKey(rotated) == nil)
                    #expect(try await daemon.authenticateDevice(secret: device.secret) == nil)
                    #expect(try await daemon.resolveTokens([device.device.token]) == [nil])
                }
            }
        }
    }
}
