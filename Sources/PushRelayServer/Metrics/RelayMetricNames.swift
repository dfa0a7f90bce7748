/// The names of every metric the relay exports, with what each means; the single list that `RelayMetrics`, the
/// Grafana dashboard (`deploy/grafana-dashboard.json`, checked by a test) and `docs/operations.md` use.
public enum RelayMetricNames {
    /// Counter: messages accepted for a target (one per `results[]` entry with a `message_id`): committed to the
    /// store. No labels.
    public static let sendsAccepted = "pushrelay_sends_accepted_total"
    /// Counter: sends rejected, label `error` = the FCM error string (`InvalidRegistration`, `NotRegistered`,
    /// `MessageTooBig`, `Unavailable`, …) or `Authentication` for a 401, `BadRequest` for an unparsable request.
    public static let sendsRejected = "pushrelay_sends_rejected_total"
    /// Counter: messages written to a device stream (redeliveries count again).
    public static let messagesDelivered = "pushrelay_messages_delivered_total"
    /// Counter: messages acknowledged by the device and deleted.
    public static let messagesAcked = "pushrelay_messages_acked_total"
    /// Counter: messages whose TTL ran out before delivery or acknowledgement.
    public static let messagesExpired = "pushrelay_messages_expired_total"
    /// Counter: messages dropped before delivery, label `reason` (see ``RelayMetrics/DropReason``).
    public static let messagesDropped = "pushrelay_messages_dropped_total"
    /// Gauge: messages pending in the store (accepted, not yet acknowledged or expired), over all devices.
    public static let queueDepth = "pushrelay_queue_depth"
    /// Gauge: devices with at least one open stream on this node.
    public static let connectedDevices = "pushrelay_connected_devices"
    /// Gauge: open device streams (`GET /v1/stream`) on this node.
    public static let openStreams = "pushrelay_open_streams"
    /// Gauge: open client connections (all listeners) on this node.
    public static let openConnections = "pushrelay_open_connections"
    /// Counter: connections closed at accept, label `reason` (`max_connections`, `max_connections_per_address`).
    public static let connectionsRefused = "pushrelay_connections_refused_total"
    /// Histogram (seconds): how long a send request waited for its commit, from its hand-over to the store to the
    /// end of the group commit that carried it (a group covers several sends).
    public static let commitDuration = "pushrelay_store_commit_duration_seconds"
    /// Gauge: pages in the SQLite store's write-ahead log after its last commit (0 on PostgreSQL); stays below a
    /// few thousand while checkpoints keep up, grows while a reader holds an old snapshot.
    public static let walPages = "pushrelay_store_wal_pages"
    /// Histogram (seconds): from the send's acceptance to the message's first write on the device stream.
    public static let sendToDeliverDuration = "pushrelay_send_to_deliver_duration_seconds"
    /// Counter: TLS handshakes completed, label `alpn` (`h2`, `http/1.1`, `none`).
    public static let tlsHandshakes = "pushrelay_tls_handshakes_total"
    /// Counter: TLS handshakes failed, label `reason` (short, e.g. `protocol`, `certificate`, `timeout`, `eof`).
    public static let tlsHandshakeFailures = "pushrelay_tls_handshake_failures_total"

    /// Every metric name above.
    public static let all: [String] = [
        sendsAccepted, sendsRejected, messagesDelivered, messagesAcked, messagesExpired, messagesDropped, queueDepth,
        connectedDevices, openStreams, openConnections, connectionsRefused, commitDuration, walPages, sendToDeliverDuration, tlsHandshakes,
        tlsHandshakeFailures,
    ]

    /// Names of the histograms (each exported as `<name>_bucket`, `<name>_sum`, `<name>_count`).
    public static let histograms: [String] = [commitDuration, sendToDeliverDuration]
}
