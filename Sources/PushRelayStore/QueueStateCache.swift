import PushRelayCore

/// The queue-policy state of devices, kept by the writer thread across transactions so that a message to a device
/// seen recently costs no queries before its insert. Writer-thread only.
///
/// An entry is exact as long as every change to the device's queue goes through this writer and no non-collapsible
/// message (or marker) of it expired. So the cache is emptied when a transaction fails, after writes that delete
/// behind the machines' back (purge, project deletion, a failed isolated request), when another connection (another
/// process) committed (`PRAGMA data_version`), and per device on acknowledge; an entry is reloaded once the earliest
/// expiry among its non-collapsible rows has passed.
final class QueueStateCache {
    struct Entry {
        var machine: QueuePolicy.Machine
        /// Microseconds: the earliest expiry of the device's non-collapsible rows (messages and marker).
        var validUntil: Int64
    }

    private var entries: [DeviceID: Entry] = [:]
    private let maxEntries: Int
    private var dataVersion: Int64?

    init(maxEntries: Int) {
        self.maxEntries = max(maxEntries, 1)
    }

    func entry(for device: DeviceID, nowMicros: Int64) -> Entry? {
        guard let entry = self.entries[device] else { return nil }
        guard entry.validUntil > nowMicros else {
            self.entries[device] = nil
            return nil
        }
        return entry
    }

    func set(_ entry: Entry, for device: DeviceID) {
        if self.entries.count >= self.maxEntries && self.entries[device] == nil {
            // A thirty-second goes (entries in hash order), not all: each one dropped costs its device two queries
            // at its next message.
            self.entries.removeSome(max(1, self.maxEntries / 32))
        }
        self.entries[device] = entry
    }

    /// Entries held. For tests.
    var count: Int { self.entries.count }

    func remove(_ device: DeviceID) {
        self.entries[device] = nil
    }

    func removeAll() {
        self.entries.removeAll(keepingCapacity: true)
    }

    /// Empties the cache if another connection committed since the last call (call at the start of a transaction).
    func checkDataVersion(_ connection: SQLiteConnection) throws(StoreError) {
        let pragma = try connection.statement("PRAGMA data_version")
        _ = try pragma.step()
        let version = pragma.int64(0)
        try pragma.run()
        if version != self.dataVersion {
            self.removeAll()
            self.dataVersion = version
        }
    }
}
