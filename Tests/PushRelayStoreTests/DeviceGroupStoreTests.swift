import Foundation
import PushRelayCore
import TestSupport
import Testing
@testable import PushRelayStore

/// FCM's device groups in the store, on both engines: create, add, remove, the look-ups, the 20-member limit, the
/// refusals that change nothing, and a group that goes with its last member (removed, unregistered, expired, or its
/// project deleted).
@Suite("Store: device groups")
struct DeviceGroupStoreTests {
    @Test("create, add, remove and the look-ups; refusals change nothing; the group goes with its last member",
          arguments: StoreKind.allCases)
    func lifecycle(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let shop = try await makeFixture(store)
                let other = try await makeFixture(store, name: "other")
                let a = shop.registration.device
                let b = try await store.registerDevice(project: shop.project, app: "com.shop", platform: "IOS").device
                let c = try await store.registerDevice(project: shop.project, app: "com.shop", platform: "IOS").device
                let stranger = other.registration.device.token
                let unknown = RegistrationToken.generate().rawValue

                guard case .done(let key) = try await store.changeDeviceGroup(
                    .create(name: "appUser-Chris", tokens: [a.token, b.token]), project: shop.project)
                else { Issue.record("not created"); return }
                #expect(NotificationKey.isWellFormed(key) && !RegistrationToken.isWellFormed(key))
                #expect(try await store.deviceGroupKey(name: "appUser-Chris", project: shop.project) == key)
                #expect(try await store.deviceGroupKey(name: "appUser-Chris", project: other.project) == nil)
                let created = try #require(try await store.deviceGroup(notificationKey: key))
                #expect(created == DeviceGroup(project: shop.project, name: "appUser-Chris", notificationKey: key, members: [a, b]))

                // Refusals, none of which changes the group.
                let refusals: [(DeviceGroupOperation, ProjectID, DeviceGroupOutcome)] = [
                    (.create(name: "appUser-Chris", tokens: [c.token]), shop.project, .nameTaken),
                    (.add(notificationKey: key, name: "someone-else", tokens: [c.token]), shop.project, .nameMismatch),
                    (.add(notificationKey: key, name: nil, tokens: [c.token, unknown]), shop.project, .tokenNotRegistered(unknown)),
                    (.add(notificationKey: key, name: nil, tokens: [stranger, c.token]), shop.project, .tokenOfAnotherProject(stranger)),
                    (.add(notificationKey: key, name: nil, tokens: [c.token]), other.project, .notFound),
                    (.add(notificationKey: NotificationKey.generate().rawValue, name: nil, tokens: [c.token]), shop.project, .notFound),
                    (.remove(notificationKey: key, name: nil, tokens: [a.token, stranger]), shop.project, .tokenOfAnotherProject(stranger)),
                    (.remove(notificationKey: key, name: "x", tokens: [a.token]), shop.project, .nameMismatch),
                    (.create(name: "new", tokens: [a.token, unknown]), shop.project, .tokenNotRegistered(unknown)),
                ]
                for (operation, project, outcome) in refusals {
                    #expect(try await store.changeDeviceGroup(operation, project: project) == outcome, "\(operation)")
                }
                #expect(try await store.deviceGroup(notificationKey: key) == created)
                #expect(try await store.deviceGroupKey(name: "new", project: shop.project) == nil)

                // The same name in another project is another group.
                guard case .done(let otherKey) = try await store.changeDeviceGroup(
                    .create(name: "appUser-Chris", tokens: [stranger]), project: other.project)
                else { Issue.record("not created"); return }
                #expect(otherKey != key)

                // Add (a member again is no error), remove (a token no device has is no member: ignored).
                #expect(try await store.changeDeviceGroup(
                    .add(notificationKey: key, name: "appUser-Chris", tokens: [c.token, a.token]), project: shop.project)
                    == .done(notificationKey: key))
                #expect(try await store.deviceGroup(notificationKey: key)?.members == [a, b, c])
                #expect(try await store.changeDeviceGroup(
                    .remove(notificationKey: key, name: nil, tokens: [b.token, unknown]), project: shop.project)
                    == .done(notificationKey: key))
                #expect(try await store.deviceGroup(notificationKey: key)?.members == [a, c])

                // The last members leave: the group is gone, its name free, its key unknown.
                #expect(try await store.changeDeviceGroup(
                    .remove(notificationKey: key, name: nil, tokens: [a.token, c.token]), project: shop.project)
                    == .done(notificationKey: key))
                #expect(try await store.deviceGroup(notificationKey: key) == nil)
                #expect(try await store.deviceGroupKey(name: "appUser-Chris", project: shop.project) == nil)
                #expect(try await store.changeDeviceGroup(
                    .add(notificationKey: key, name: nil, tokens: [a.token]), project: shop.project) == .notFound)
                guard case .done(let again) = try await store.changeDeviceGroup(
                    .create(name: "appUser-Chris", tokens: [b.token]), project: shop.project)
                else { Issue.record("not created again"); return }
                #expect(again != key)
                #expect(try await groupRows(kind, directory) == ["appUser-Chris", "appUser-Chris"])

                // A project deleted takes its groups with it.
                #expect(try await store.deleteProject(named: "other"))
                #expect(try await store.deviceGroup(notificationKey: otherKey) == nil)
                #expect(try await groupRows(kind, directory) == ["appUser-Chris"])
            }
        }
    }

    @Test("a group holds at most 20 members: a create or an add past it is refused", arguments: StoreKind.allCases)
    func twentyMembers(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory) { store in
                let shop = try await makeFixture(store)
                var tokens = [shop.registration.device.token]
                for _ in 0..<21 {
                    tokens.append(try await store.registerDevice(project: shop.project, app: "a", platform: "IOS").device.token)
                }
                #expect(try await store.changeDeviceGroup(.create(name: "big", tokens: tokens), project: shop.project)
                    == .tooManyMembers)
                guard case .done(let key) = try await store.changeDeviceGroup(
                    .create(name: "full", tokens: Array(tokens[0..<20])), project: shop.project)
                else { Issue.record("not created"); return }
                #expect(try await store.changeDeviceGroup(
                    .add(notificationKey: key, name: nil, tokens: [tokens[20]]), project: shop.project) == .tooManyMembers)
                // Members already in do not count twice.
                #expect(try await store.changeDeviceGroup(
                    .add(notificationKey: key, name: nil, tokens: [tokens[0], tokens[19]]), project: shop.project)
                    == .done(notificationKey: key))
                #expect(try await store.deviceGroup(notificationKey: key)?.members.map(\.token) == Array(tokens[0..<20]))
            }
        }
    }

    @Test("unregistered and expired devices leave their groups; a group left without members is deleted",
          arguments: StoreKind.allCases)
    func removedDevicesLeaveTheirGroups(kind: StoreKind) async throws {
        let clock = FakeClock()
        try await withTemporaryDirectory { directory in
            try await withStore(kind, in: directory, clock: clock) { store in
                let shop = try await makeFixture(store)
                let a = shop.registration
                let b = try await store.registerDevice(project: shop.project, app: "a", platform: "IOS")
                guard case .done(let both) = try await store.changeDeviceGroup(
                    .create(name: "both", tokens: [a.device.token, b.device.token]), project: shop.project),
                    case .done(let onlyA) = try await store.changeDeviceGroup(
                        .create(name: "only-a", tokens: [a.device.token]), project: shop.project),
                    case .done(let onlyB) = try await store.changeDeviceGroup(
                        .create(name: "only-b", tokens: [b.device.token]), project: shop.project)
                else { Issue.record("not created"); return }

                #expect(try await store.unregisterDevice(secret: a.secret) == a.device)
                #expect(try await store.deviceGroup(notificationKey: both)?.members == [b.device])
                #expect(try await store.deviceGroup(notificationKey: onlyA) == nil)
                #expect(try await groupRows(kind, directory) == ["both", "only-b"])

                clock.advance(by: 7_200)
                #expect(try await store.expireDevices(unseenFor: .seconds(3600), limit: 100) == 1)
                #expect(try await store.deviceGroup(notificationKey: both) == nil)
                #expect(try await store.deviceGroup(notificationKey: onlyB) == nil)
                #expect(try await groupRows(kind, directory) == [])
            }
        }
    }

    /// Device expiry skips a group whose row another transaction holds (waiting could deadlock with an `add`): the
    /// group, left without members, counts as none at once, and the next purge deletes its row.
    @Test("PostgreSQL: a group that device expiry had to skip counts as none, and goes with the next purge")
    func groupSkippedByExpiryGoesWithTheNextPurge() async throws {
        let clock = FakeClock()
        try await withTemporaryDirectory { directory in
            try await withStore(.postgres, in: directory, clock: clock) { store in
                let fixture = try await makeFixture(store)
                guard case .done(let key) = try await store.changeDeviceGroup(
                    .create(name: "held", tokens: [fixture.registration.device.token]), project: fixture.project)
                else { Issue.record("not created"); return }
                let holder = try await holdingSession(
                    "BEGIN; SELECT id FROM device_groups WHERE name = 'held' FOR UPDATE;", name: "group_holder",
                    in: directory)

                clock.advance(by: 7_200)
                #expect(try await store.expireDevices(unseenFor: .seconds(3600), limit: 100) == 1)
                #expect(try await groupRows(.postgres, directory) == ["held"], "skipped: its row was held")
                #expect(try await store.deviceGroup(notificationKey: key) == nil, "without members: no group")
                #expect(try await store.deviceGroupKey(name: "held", project: fixture.project) == nil)
                _ = try await store.purge(limit: 1_000)
                #expect(try await groupRows(.postgres, directory) == ["held"], "still held: left for the next purge")

                try holder.send("ROLLBACK;")
                _ = await holder.finish()
                _ = try await store.purge(limit: 1_000)
                #expect(try await groupRows(.postgres, directory) == [])
            }
        }
    }

    /// Every change to a group's members holds the group's row: two nodes adding the 20th member at once count one
    /// after the other, and two creates of one name make one group.
    @Test("PostgreSQL: two nodes adding past the limit at once add one member; two creates of a name make one group")
    func concurrentChangesOnTwoNodes() async throws {
        try await withTemporaryDirectory { directory in
            try await withStore(.postgres, in: directory) { first in
                let second = try await openStore(.postgres, in: directory)
                defer { Task { await second.close() } }
                let shop = try await makeFixture(first)
                var registered = [shop.registration.device.token]
                for _ in 0..<20 {
                    registered.append(try await first.registerDevice(project: shop.project, app: "a", platform: "IOS").device.token)
                }
                let tokens = registered
                for round in 0..<10 {
                    guard case .done(let key) = try await first.changeDeviceGroup(
                        .create(name: "g\(round)", tokens: Array(tokens[0..<19])), project: shop.project)
                    else { Issue.record("not created"); return }
                    async let one = first.changeDeviceGroup(
                        .add(notificationKey: key, name: nil, tokens: [tokens[19]]), project: shop.project)
                    async let two = second.changeDeviceGroup(
                        .add(notificationKey: key, name: nil, tokens: [tokens[20]]), project: shop.project)
                    let outcomes = try await [one, two]
                    #expect(outcomes.filter { $0 == .tooManyMembers }.count == 1, "\(outcomes)")
                    #expect(try await first.deviceGroup(notificationKey: key)?.members.count == 20)

                    async let created = first.changeDeviceGroup(.create(name: "c\(round)", tokens: [tokens[0]]), project: shop.project)
                    async let raced = second.changeDeviceGroup(.create(name: "c\(round)", tokens: [tokens[1]]), project: shop.project)
                    let creates = try await [created, raced]
                    #expect(creates.filter { $0 == .nameTaken }.count == 1, "\(creates)")
                }
            }
        }
    }

    /// A store of the schema before device groups (SQLite 6, PostgreSQL 7) opens and gets them.
    @Test("a database of the schema before device groups is migrated", arguments: StoreKind.allCases)
    func olderDatabaseIsMigrated(kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            let token = try await withStore(kind, in: directory) { store in
                try await makeFixture(store).registration.device.token
            }
            switch kind {
            case .sqlite:
                let connection = try SQLiteConnection(path: directory + "/pushrelay.sqlite", busyTimeout: .seconds(5))
                try connection.execute("DROP TABLE device_group_members; DROP TABLE device_groups; PRAGMA user_version = 6;")
                connection.close()
            case .postgres:
                let result = try await TestPostgres.shared.psql(
                    "DROP TABLE device_group_members; DROP TABLE device_groups; "
                        + "DELETE FROM pushrelay_migrations WHERE version >= 8;",
                    database: databaseName(for: directory))
                #expect(result.status == 0, "\(result.stderr)")
            }
            try await withStore(kind, in: directory) { store in
                let shop = try #require(try await store.project(named: "shop"))
                guard case .done(let key) = try await store.changeDeviceGroup(
                    .create(name: "u", tokens: [token]), project: shop.id)
                else { Issue.record("not created"); return }
                #expect(try await store.deviceGroup(notificationKey: key)?.members.map(\.token) == [token])
            }
            switch kind {
            case .sqlite:
                #expect(SQLiteSchema.version == 7)
            case .postgres:
                #expect(PostgresSchema.version == 8)
                let result = try await TestPostgres.shared.psql(
                    "SELECT max(version) FROM pushrelay_migrations", database: databaseName(for: directory))
                #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "8")
            }
        }
    }
}

/// The names of the device groups the database holds, in name order.
func groupRows(_ kind: StoreKind, _ directory: String) async throws -> [String] {
    switch kind {
    case .sqlite:
        let connection = try SQLiteConnection(path: directory + "/pushrelay.sqlite", busyTimeout: .seconds(5))
        defer { connection.close() }
        let select = try connection.statement("SELECT name FROM device_groups ORDER BY name")
        var names: [String] = []
        while try select.step() { names.append(select.text(0) ?? "") }
        return names
    case .postgres:
        let result = try await TestPostgres.shared.psql(
            "SELECT name FROM device_groups ORDER BY name", database: databaseName(for: directory))
        return result.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}
