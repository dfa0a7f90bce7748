import NIOConcurrencyHelpers
import PushRelayStore

/// The store's figures for `/metrics` and its health for `/readyz`, refreshed by the relay's periodic work at most
/// once per interval, so that neither route touches the store: both are unauthenticated, and counting every row of
/// the messages and devices tables per request let parallel probes stall sends.
final class StoreStatisticsSnapshot: Sendable {
    private struct State {
        var statistics: QueueStatistics?
        /// Why the last refresh could not read the store (nil: it could).
        var readFailure: String?
    }

    private let state = NIOLockedValueBox(State())

    /// The figures of the last successful refresh, if any.
    var statistics: QueueStatistics? { state.withLockedValue { $0.statistics } }

    /// Why the last refresh could not read the store; nil when it could. The store's own words (`StoreError`
    /// messages never hold a key, a secret or a URL's password).
    var readFailure: String? { state.withLockedValue { $0.readFailure } }

    /// Takes one snapshot: reads the statistics, records them in `metrics`, and notes whether the store answered.
    func refresh(store: any PushStore, metrics: RelayMetrics) async {
        do {
            let statistics = try await store.queueStatistics()
            metrics.setQueueDepth(statistics.storedMessages)
            metrics.setWALPages(store.walPages ?? 0)
            state.withLockedValue {
                $0.statistics = statistics
                $0.readFailure = nil
            }
        } catch {
            let reason = (error as? StoreError)?.message ?? "the store could not be read"
            state.withLockedValue { $0.readFailure = reason }
        }
    }
}
