import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
import PushRelayCore

/// The node's `LISTEN` connection: turns other nodes' commit notifications into remote-commit calls and auth cache
/// invalidations. When the connection is lost it reconnects with a back-off; after it is back, every live stream is
/// told to read the store from its cursor (``RemoteCommit/unknown``) and the auth cache is cleared, since
/// notifications sent meanwhile are gone: late, never lost.
final class PostgresListener: Sendable {
    private let context: PostgresStoreContext
    private let listening = NIOLockedValueBox<CheckedContinuation<Void, any Error>?>(nil)

    init(context: PostgresStoreContext) {
        self.context = context
    }

    /// Runs until cancelled; `started` is resumed once the first `LISTEN` is active (or with the first failure).
    func run(started: CheckedContinuation<Void, any Error>) async {
        self.listening.withLockedValue { $0 = started }
        var connected = 0
        var delay = Duration.milliseconds(50)
        while !Task.isCancelled {
            do {
                let connection = try await self.context.connect(id: 2000 + connected)
                // The read-backs go through it: one issued as the connection closes would otherwise never end, and
                // the notifications after it would never be read (nor the loss of the connection seen).
                let watch = PostgresConnectionWatch(connection: connection)
                connected += 1
                do {
                    try await connection.listen(on: PostgresStoreContext.channel) { notifications in
                        if let started = self.listening.withLockedValue({ $0.take() }) {
                            started.resume()
                        } else {
                            self.missedNotifications()
                        }
                        delay = .milliseconds(50)
                        let probe = Task { await self.probe(watch) }
                        defer { probe.cancel() }
                        for try await notification in notifications {
                            await self.handle(notification.payload, watch: watch)
                        }
                    }
                } catch {
                    if !Task.isCancelled {
                        self.context.logger.warning(
                            "PostgreSQL notification connection lost; reconnecting",
                            metadata: ["relay.error": "\(PostgresStoreContext.describe(error))"])
                    }
                }
                try? await connection.close()
            } catch {
                if let started = self.listening.withLockedValue({ $0.take() }) {
                    started.resume(throwing: error)
                    return
                }
                self.context.logger.warning(
                    "cannot reach PostgreSQL for notifications; retrying", metadata: ["relay.error": "\(error)"])
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(1))
        }
    }

    /// `node auth-flag devices [first last]` (see ``PostgresWriter``), or `node s devices attachments` (streams
    /// announced, ``streamAnnounced(_:)``). A commit's payload names a device list, `*` (too many to list) or `-`
    /// (none); with the batch's id range, the rows are read back here, in one query on this connection (so in
    /// commit order), and handed over whole; without it, or if that read fails, the devices' streams read the
    /// store themselves.
    ///
    /// This node's own batches come this way too (their auth flags it has applied already): PostgreSQL sends the
    /// notifications in commit order, and ids increase in commit order, so a stream that gets every batch from here
    /// gets its rows in id order. Handing a node's own commits to its streams straight from the writer let them
    /// overtake another node's earlier commit still being read back here; the stream's cursor had then moved past
    /// that row, which it never wrote (and a `Last-Event-ID` past it acknowledged it unseen).
    private func handle(_ payload: String, watch: PostgresConnectionWatch) async {
        let fields = payload.split(separator: " ")
        if fields.count == 4, fields[1] == "s" {
            self.streamAnnounced(fields)
            return
        }
        guard fields.count == 3 || fields.count == 5 else { return }
        let own = fields[0] == self.context.node
        if !own {
            self.applyAuthFlag(fields[1])
        } else if fields.count == 3 {
            return  // this node's own auth flag, applied when it committed; its rows come with an id range
        }
        await self.handOver(fields, watch: watch)
        if own, let last = Int64(fields[4]) {
            // Its rows are with the streams: time-to-live-0 sends waiting behind them may go.
            self.context.deliveryOrder.settled(upTo: last)
        }
    }

    /// `node s devices attachments` (``PostgresStreamAnnouncements``): streams this node announced, or another
    /// node's.
    private func streamAnnounced(_ fields: [Substring]) {
        guard let streams = PostgresStreamAnnouncements.parse(devices: fields[2], attachments: fields[3]),
            let observer = self.context.remoteObserver.current
        else { return }
        let own = fields[0] == self.context.node
        for (device, attachment) in streams {
            observer(own ? .streamAnnounced(device, attachment: attachment) : .streamOpenedElsewhere(device))
        }
    }

    /// Hands a batch's rows (or its devices, or "every stream") to the observer.
    private func handOver(_ fields: [Substring], watch: PostgresConnectionWatch) async {
        guard fields[2] != "-", let observer = self.context.remoteObserver.current else { return }
        guard fields[2] != "*" else {
            observer(.unknown)
            return
        }
        var devices = fields[2].split(separator: ",").compactMap { Int64($0) }
        if let streaming = self.context.localStreams.current {
            // Only the rows of devices streaming here are read back: a stream that attaches later reads the store.
            devices = streaming(devices.map { DeviceID(rawValue: $0) }).map(\.rawValue)
            guard !devices.isEmpty else { return }
        }
        if fields.count == 5, let first = Int64(fields[3]), let last = Int64(fields[4]), first <= last,
            let rows = await self.committedRows(devices: devices, first: first, last: last, watch: watch)
        {
            observer(.rows(rows))
        } else {
            observer(.devices(devices.map { DeviceID(rawValue: $0) }))
        }
    }

    /// Another node's auth flag: `a` (credentials changed: clear the cache), an eviction list, or `-`.
    private func applyAuthFlag(_ flag: Substring) {
        if flag == "a" {
            self.context.authCache.invalidate(epoch: nil)
        } else if flag.hasPrefix("e") {
            if let notice = PostgresEvictionNotice(flag: flag) {
                self.context.authCache.evict(tokens: notice.tokens, secrets: notice.secrets, epoch: notice.epoch)
            } else {
                self.context.authCache.invalidate(epoch: nil)
            }
        }
    }

    /// The rows of `devices` with ids in `first...last` that are still there, in id order; nil if the read fails.
    private func committedRows(devices: [Int64], first: Int64, last: Int64, watch: PostgresConnectionWatch) async
        -> [StoredMessage]?
    {
        do {
            let rows = try await watch.rows(
                """
                SELECT device_id, id, kind, collapse_key, expires_at, body FROM messages
                WHERE device_id = ANY(\(devices)) AND id BETWEEN \(first) AND \(last) ORDER BY id
                """,
                logger: self.context.logger, collect: true)
            return try rows.map { row in
                let (device, id, kind, collapseKey, expiresAt, body) = try row.decode(
                    (Int64, Int64, Int16, String?, Int64, ByteBuffer).self)
                return StoredMessage(
                    id: MessageID(rawValue: id), device: DeviceID(rawValue: device),
                    kind: kind == 1 ? .deletedMessages : .message, body: Array(body.readableBytesView),
                    collapseKey: collapseKey, expiresAtMicros: expiresAt)
            }
        } catch {
            self.context.logger.debug(
                "reading another node's committed rows failed; the streams read the store",
                metadata: ["relay.error": "\(PostgresStoreContext.describe(error))"])
            return nil
        }
    }

    /// Asks PostgreSQL on the notification connection, every ``PostgresStore/Configuration/listenerProbeInterval``,
    /// whether it still answers. The connection only receives: cut without a FIN or RST (a NAT or firewall that
    /// forgot the idle connection, PostgreSQL restarted behind a partition) it would wait for notifications for ever,
    /// and the node's streams would get nothing more while sends went on being stored. Unanswered within the read
    /// timeout, the connection is closed: the listener connects anew and every stream reads the store. The question
    /// also keeps the connection from being idle.
    private func probe(_ watch: PostgresConnectionWatch) async {
        let (interval, timeout, logger) = (
            self.context.configuration.listenerProbeInterval, self.context.configuration.readTimeout,
            self.context.logger
        )
        while true {
            guard (try? await Task.sleep(for: interval)) != nil else { return }
            do {
                _ = try await PostgresStore.race(timeout: timeout) {
                    try await watch.rows("SELECT 1", logger: logger, collect: false)
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning(
                    "PostgreSQL did not answer on the notification connection; reconnecting",
                    metadata: ["relay.error": "\(PostgresStoreContext.describe(error))"])
                try? await watch.connection.close()
                return
            }
        }
    }

    private func missedNotifications() {
        self.context.authCache.invalidate(epoch: nil)
        self.context.remoteObserver.current?(.unknown)
        self.context.deliveryOrder.settleAll()
    }
}

extension Optional {
    /// The value, leaving nil behind.
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
