import Foundation
import PushRelayCore
import Testing
import TestSupport
@testable import PushRelayStore

/// ``PostgresStore/importAll(from:progress:)``: what a SQLite store holds, PostgreSQL holds after the copy, with the
/// same ids and credentials, and the identity sequences and the message-id mark past the copied rows.
@Suite("Store: SQLite into PostgreSQL")
struct StoreImportTests {
    @Test("keys (rotated and current), devices, queues, subscriptions, service accounts and tokens arrive; new rows get new ids")
    func everythingArrives() async throws {
        try await withTemporaryDirectory { directory in
            let sqlite = try await openStore(.sqlite, in: directory) as! SQLiteStore
            let shop = try await sqlite.createProject(name: "shop")
            let rotated = try await sqlite.rotateServerKey(project: "shop", gracePeriod: .seconds(3600))
            let device = try await sqlite.registerDevice(project: shop.project.id, app: "a", platform: "IOS")
            let results = try await sqlite.enqueue([
                NewMessage(device: device.device.id, body: [1]), NewMessage(device: device.device.id, body: [2], collapseKey: "c"),
            ])
            _ = try await sqlite.subscribe(tokens: [device.device.token], to: "news", project: shop.project.id)
            let key = try await sqlite.addServiceAccountKey(
                project: "shop", keyID: "k1", clientEmail: "a@shop", publicKeyPEM: "PEM")
            try await sqlite.issueAccessToken("access", key: key, expiresAt: Date().addingTimeInterval(600))
            let before = try await sqlite.pendingMessages(for: device.device.id, after: nil, limit: 10)

            let postgres = try await openStore(.postgres, in: directory) as! PostgresStore
            let report = try await postgres.importAll(from: sqlite)
            #expect(report.description.hasPrefix("projects 1, server_keys 2, devices 1, messages 2, topics 1, subscriptions 1"),
                    "\(report)")
            #expect(report.count(of: "service_account_keys") == 1 && report.count(of: "access_tokens") == 1)

            #expect(try await postgres.authenticateServerKey(shop.serverKey)?.name == "shop", "the rotated key, in grace")
            #expect(try await postgres.authenticateServerKey(rotated)?.name == "shop")
            #expect(try await postgres.authenticateClientKey(shop.clientKey, project: "shop") != nil)
            #expect(try await postgres.authenticateDevice(secret: device.secret) == device.device)
            #expect(try await postgres.authenticateAccessToken("access")?.name == "shop")
            #expect(try await postgres.pendingMessages(for: device.device.id, after: nil, limit: 10) == before)
            #expect(try await postgres.subscriptions(of: device.device.id).map(\.topic) == ["news"])

            // New rows: ids past the copied ones, message ids past the copied mark; the device count came along.
            let other = try await postgres.createProject(name: "other")
            #expect(other.project.id > shop.project.id)
            let second = try await postgres.registerDevice(project: shop.project.id, app: "a", platform: "IOS", deviceLimit: 2)
            #expect(second.device.id > device.device.id)
            await #expect(throws: StoreError.self) {
                try await postgres.registerDevice(project: shop.project.id, app: "a", platform: "IOS", deviceLimit: 2)
            }
            let next = try await postgres.enqueue([NewMessage(device: device.device.id, body: [3])])
            let copiedIDs = results.compactMap(\.messageID)
            #expect(try #require(next.first?.messageID) > copiedIDs.max()!)

            // A second copy into a database with projects is refused and changes nothing.
            let again = await #expect(throws: StoreError.self) { try await postgres.importAll(from: sqlite) }
            #expect(again?.code == .alreadyExists)
            await postgres.close()
            await sqlite.close()
        }
    }
}
