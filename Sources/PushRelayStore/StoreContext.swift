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

    /// A duration in microseconds, saturating at `Int64`'s bounds (a grace of 10^13 s is "for ever", not a wrapped
    /// negative that cuts a key off at once).
    static func micros(_ duration: Duration) -> Int64 {
        let components = duration.components
        let (whole, overflow) = components.seconds.multipliedReportingOverflow(by: 1_000_000)
        if overflow { return components.seconds < 0 ? .min : .max }
        return saturatingSum(whole, components.attoseconds / 1_000_000_000_000)
    }

    /// `a + b`, saturating at `Int64`'s bounds (an instant plus a very long duration).
    static func saturatingSum(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        if overflow { return b < 0 ? .min : .max }
        return sum
    }
}
