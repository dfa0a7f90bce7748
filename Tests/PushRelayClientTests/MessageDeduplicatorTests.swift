import PushRelayWire
import Foundation
import Testing

@testable import PushRelayClient

@Suite("MessageDeduplicator")
struct MessageDeduplicatorTests {
    @Test("remembers ids, forgets the oldest beyond its capacity")
    func boundedWindow() throws {
        var window = MessageDeduplicator(capacity: 3)
        #expect(try window.insert("1"))
        #expect(try !window.insert("1"))
        for id in ["2", "3", "4"] { try window.insert(id) }
        #expect(!window.contains("1"))
        #expect(window.ids == ["2", "3", "4"])
        for id in (5...20).map(String.init) { try window.insert(id) }
        #expect(window.ids == ["18", "19", "20"])
        #expect(window.contains("19") && !window.contains("17"))
    }

    @Test("persists to a file and reloads, keeping order and capacity")
    func persistence() throws {
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("dedup.json")
        var window = try MessageDeduplicator.load(capacity: 4, fileURL: file)
        #expect(window.ids.isEmpty)
        for id in ["a", "b", "c", "d", "e"] { try window.insert(id) }
        let reloaded = try MessageDeduplicator.load(capacity: 4, fileURL: file)
        #expect(reloaded.ids == ["b", "c", "d", "e"])
        let smaller = try MessageDeduplicator.load(capacity: 2, fileURL: file)
        #expect(smaller.ids == ["d", "e"])
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(leftovers == ["dedup.json"])
    }

    @Test("a corrupt file is an error, not an empty window")
    func corruptFile() throws {
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("dedup.json")
        try Data("{not json".utf8).write(to: file)
        #expect { try MessageDeduplicator.load(capacity: 4, fileURL: file) } throws: { error in
            (error as? PushClientError)?.code == .invalidFile
        }
    }

    @Test("credentials round-trip through a file readable by the owner only, without the secret in descriptions")
    func credentialsFile() throws {
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("device.json")
        let credentials = PushCredentials(token: Scenario.token, secret: "s3cret", senderID: Scenario.senderID)
        try credentials.save(to: file)
        #expect(try PushCredentials.load(from: file) == credentials)
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(!"\(credentials)".contains("s3cret"))
    }
}
