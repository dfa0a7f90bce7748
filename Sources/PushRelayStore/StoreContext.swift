import Foundation
import Logging
import NIOConcurrencyHelpers
import PushRelayCore

/// What the store's parts share: configuration, the clock, the id generator and the auth cache.
final class StoreContext: Sendable {
    let configuration: SQLiteStore.Configuration
    let logger: Logger
    let ids: NIOLockedValueBox<MessageIDGenerator>
    let authCache: AuthCache

    init(configuration: SQLiteStore.Configuration, logger: Logger, lastMessageID: Int64) {
        self.configuration = configuration
        self.logger = logger
        self.ids = NIOLockedValueBox(MessageIDGenerator(last: lastMessageID))
        self.authCache = AuthCache(maxEntries: configuration.authCacheEntries)
    }

    /// Now, in microseconds since the Unix epoch, from the configured clock.
    var nowMicros: Int64 {
        Self.micros(self.configuration.clock())
    }

    /// The next message id.
    func nextMessageID(nowMicros: Int64) -> Int64 {
        self.ids.withLockedValue { $0.next(nowMicros: nowMicros) }
    }

    /// The last id handed out.
    var lastMessageID: Int64 {
        self.ids.withLockedValue { $0.last }
    }

    static func micros(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    static func date(micros: Int64) -> Date {
        Date(timeIntervalSince1970: Double(micros) / 1_000_000)
    }

    static func micros(_ duration: Duration) -> Int64 {
        let components = duration.components
        return components.seconds &* 1_000_000 &+ components.attoseconds / 1_000_000_000_000
    }
}
