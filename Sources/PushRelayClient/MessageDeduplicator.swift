import Foundation

/// The ids of the most recently handled messages, so that a message delivered again (at-least-once delivery) is
/// handed to the app only once.
///
/// A bounded window: it remembers the last `capacity` ids and forgets the oldest first. It lives in the client,
/// not in a connection, so it survives reconnects; with a file it also survives restarts. The file is JSON
/// (`{"version":1,"ids":[…]}`, oldest first), replaced atomically on every change.
struct MessageDeduplicator: Sendable {
    /// How many ids the window keeps.
    let capacity: Int
    /// Where the window is persisted, if anywhere.
    let fileURL: URL?

    private var order: [String] = []
    private var head = 0
    private var members: Set<String> = []

    /// Creates an empty window.
    init(capacity: Int, fileURL: URL? = nil) {
        self.capacity = max(1, capacity)
        self.fileURL = fileURL
    }

    /// Creates a window from `fileURL` when the file exists; an absent file gives an empty window.
    ///
    /// - Throws: ``PushClientError/Code-swift.struct/invalidFile`` when the file exists but is not a window.
    static func load(capacity: Int, fileURL: URL) throws -> MessageDeduplicator {
        var window = MessageDeduplicator(capacity: capacity, fileURL: fileURL)
        guard FileManager.default.fileExists(atPath: fileURL.path) else { return window }
        do {
            let stored = try JSONDecoder().decode(Stored.self, from: Data(contentsOf: fileURL))
            for id in stored.ids { window.insertInMemory(id) }
        } catch {
            throw PushClientError(code: .invalidFile,
                                  message: "deduplication file \(fileURL.path) is unreadable: \(error)")
        }
        return window
    }

    private struct Stored: Codable {
        var version = 1
        var ids: [String]
    }

    /// Whether `id` was handled already.
    func contains(_ id: String) -> Bool { members.contains(id) }

    /// The ids in the window, oldest first.
    var ids: [String] { Array(order[head...]) }

    /// Records `id` as handled and persists the window when it has a file. Returns `false` if it was known.
    ///
    /// - Throws: the file system's error when the file cannot be written (the id is recorded in memory anyway).
    @discardableResult
    mutating func insert(_ id: String) throws -> Bool {
        guard insertInMemory(id) else { return false }
        try save()
        return true
    }

    @discardableResult
    private mutating func insertInMemory(_ id: String) -> Bool {
        guard members.insert(id).inserted else { return false }
        order.append(id)
        if members.count > capacity {
            members.remove(order[head])
            head += 1
            if head >= capacity {  // Compact now and then instead of shifting on every eviction.
                order.removeFirst(head)
                head = 0
            }
        }
        return true
    }

    /// Writes the window to its file, atomically (a temporary file renamed over the old one).
    func save() throws {
        guard let fileURL else { return }
        let data = try JSONEncoder().encode(Stored(ids: ids))
        try data.write(to: fileURL, options: .atomic)
    }
}
