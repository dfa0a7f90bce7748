import Logging
import NIOConcurrencyHelpers

/// Keeps every log record in memory so tests can check what was logged, and how often.
struct RecordingLogHandler: LogHandler {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: Logger.Metadata
    }

    final class Store: Sendable {
        private let records = NIOLockedValueBox<[Record]>([])
        func append(_ record: Record) { records.withLockedValue { $0.append(record) } }
        var all: [Record] { records.withLockedValue { $0 } }
        func messages(_ text: String) -> [Record] { all.filter { $0.message == text } }
    }

    let store: Store
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        store.append(Record(level: event.level, message: "\(event.message)",
                            metadata: metadata.merging(event.metadata ?? [:]) { $1 }))
    }

    static func makeLogger() -> (Logger, Store) {
        let store = Store()
        return (Logger(label: "test.tls") { _ in RecordingLogHandler(store: store) }, store)
    }
}
