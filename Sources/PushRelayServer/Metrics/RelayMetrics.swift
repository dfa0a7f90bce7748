public import Metrics
import NIOConcurrencyHelpers

/// Records what the relay does, through swift-metrics (exported by ``PrometheusExporter`` on `/metrics`).
///
/// One instance per process, shared by the send handler, the store and the delivery fan-out. Metric names are in
/// ``RelayMetricNames``. Every method is cheap: handlers are created once (labelled ones once per label value).
public final class RelayMetrics: Sendable {
    /// Why a message was dropped before delivery (label `reason` of `pushrelay_messages_dropped_total`).
    public enum DropReason: String, Sendable, CaseIterable {
        /// Replaced by a newer message with the same `collapse_key`.
        case collapsed
        /// More than `max_pending_messages` pending: the queue was cleared (`deleted_messages`).
        case overflow
        /// `time_to_live` 0 and the device was not connected.
        case ttlZero = "ttl_zero"
        /// The registration was deleted with messages still pending.
        case unregistered
    }

    private let factory: any MetricsFactory
    private let sendsAccepted: Counter
    private let messagesDelivered: Counter
    private let messagesAcked: Counter
    private let messagesExpired: Counter
    private let droppedByReason: [DropReason: Counter]
    private let queueDepth: Gauge
    private let walPages: Gauge
    private let connectedDevices: Meter
    private let openStreams: Meter
    private let openConnections: Meter
    private let commitDuration: Timer
    private let sendToDeliverDuration: Timer
    private let rejectedByError: NIOLockedValueBox<[String: Counter]>
    private let handshakesByALPN: NIOLockedValueBox<[String: Counter]>
    private let handshakeFailuresByReason: NIOLockedValueBox<[String: Counter]>
    private let refusedOverLimit: Counter
    private let refusedOverAddressLimit: Counter

    /// Metrics created through `factory` (the global `MetricsSystem.factory` by default; a test passes its own
    /// `PrometheusMetricsFactory` so that nothing global is bootstrapped).
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        typealias Names = RelayMetricNames
        self.factory = factory
        self.sendsAccepted = Counter(label: Names.sendsAccepted, factory: factory)
        self.messagesDelivered = Counter(label: Names.messagesDelivered, factory: factory)
        self.messagesAcked = Counter(label: Names.messagesAcked, factory: factory)
        self.messagesExpired = Counter(label: Names.messagesExpired, factory: factory)
        var dropped: [DropReason: Counter] = [:]
        for reason in DropReason.allCases {
            dropped[reason] = Counter(
                label: Names.messagesDropped,
                dimensions: [("reason", reason.rawValue)],
                factory: factory
            )
        }
        self.droppedByReason = dropped
        self.queueDepth = Gauge(label: Names.queueDepth, factory: factory)
        self.walPages = Gauge(label: Names.walPages, factory: factory)
        self.connectedDevices = Meter(label: Names.connectedDevices, factory: factory)
        self.openStreams = Meter(label: Names.openStreams, factory: factory)
        self.openConnections = Meter(label: Names.openConnections, factory: factory)
        self.commitDuration = Timer(label: Names.commitDuration, factory: factory)
        self.sendToDeliverDuration = Timer(label: Names.sendToDeliverDuration, factory: factory)
        self.rejectedByError = NIOLockedValueBox([:])
        self.handshakesByALPN = NIOLockedValueBox([:])
        self.handshakeFailuresByReason = NIOLockedValueBox([:])
        self.refusedOverLimit = Counter(
            label: Names.connectionsRefused, dimensions: [("reason", "max_connections")], factory: factory)
        self.refusedOverAddressLimit = Counter(
            label: Names.connectionsRefused, dimensions: [("reason", "max_connections_per_address")], factory: factory)
    }

    // MARK: Sends

    /// `count` messages were committed and answered with a message id.
    public func sendsAccepted(count: Int = 1) {
        sendsAccepted.increment(by: count)
    }

    /// `count` targets (or whole requests) were rejected with this FCM error string (`InvalidRegistration`, …).
    public func sendsRejected(error: String, count: Int = 1) {
        labelled(rejectedByError, RelayMetricNames.sendsRejected, "error", error).increment(by: count)
    }

    // MARK: Messages

    /// `count` messages were written to device streams.
    public func messagesDelivered(count: Int = 1) {
        messagesDelivered.increment(by: count)
    }

    /// `count` messages were acknowledged and deleted.
    public func messagesAcked(count: Int = 1) {
        messagesAcked.increment(by: count)
    }

    /// `count` messages expired (TTL) before acknowledgement.
    public func messagesExpired(count: Int = 1) {
        messagesExpired.increment(by: count)
    }

    /// `count` messages were dropped for `reason`.
    public func messagesDropped(reason: DropReason, count: Int = 1) {
        droppedByReason[reason]?.increment(by: count)
    }

    // MARK: Gauges

    /// The number of pending messages in the store (set by whoever counts them, e.g. the purge pass).
    public func setQueueDepth(_ depth: Int) {
        queueDepth.record(depth)
    }

    /// The pages in the store's write-ahead log (``PushStore/walPages``).
    public func setWALPages(_ pages: Int) {
        walPages.record(pages)
    }

    /// A device got its first open stream on this node.
    public func deviceConnected() { connectedDevices.increment() }
    /// A device's last stream on this node closed.
    public func deviceDisconnected() { connectedDevices.decrement() }
    /// A device stream opened.
    public func streamOpened() { openStreams.increment() }
    /// A device stream closed.
    public func streamClosed() { openStreams.decrement() }
    /// A client connection was accepted.
    public func connectionOpened() { openConnections.increment() }
    /// A client connection closed.
    public func connectionClosed() { openConnections.decrement() }
    /// A connection was closed at accept because `max_connections` was reached.
    public func connectionRefusedOverLimit() { refusedOverLimit.increment() }
    /// A connection was closed at accept because `max_connections_per_address` was reached for its address.
    public func connectionRefusedOverAddressLimit() { refusedOverAddressLimit.increment() }

    // MARK: Latencies

    /// One store commit took `duration`.
    public func recordCommit(duration: Duration) {
        commitDuration.recordNanoseconds(Self.nanoseconds(duration))
    }

    /// A message reached its device's stream `duration` after it was accepted.
    public func recordSendToDeliver(duration: Duration) {
        sendToDeliverDuration.recordNanoseconds(Self.nanoseconds(duration))
    }

    // MARK: TLS

    /// A TLS handshake completed; `alpn` is the negotiated protocol (`h2`, `http/1.1`) or `nil`.
    public func tlsHandshakeCompleted(alpn: String?) {
        labelled(handshakesByALPN, RelayMetricNames.tlsHandshakes, "alpn", alpn ?? "none").increment()
    }

    /// A TLS handshake failed, for a short `reason` (`protocol`, `certificate`, `timeout`, `eof`).
    public func tlsHandshakeFailed(reason: String) {
        labelled(handshakeFailuresByReason, RelayMetricNames.tlsHandshakeFailures, "reason", reason).increment()
    }

    // MARK: Helpers

    /// The counter for one label value, created once. Label values are bounded sets (FCM error strings, ALPN ids,
    /// failure kinds); past 64 distinct values new ones are folded into `other` to keep the series count bounded.
    private func labelled(
        _ box: NIOLockedValueBox<[String: Counter]>,
        _ name: String,
        _ label: String,
        _ value: String
    ) -> Counter {
        box.withLockedValue { counters in
            if let counter = counters[value] { return counter }
            let key = counters.count < 64 ? value : "other"
            if let counter = counters[key] { return counter }
            let counter = Counter(label: name, dimensions: [(label, key)], factory: factory)
            counters[key] = counter
            return counter
        }
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
