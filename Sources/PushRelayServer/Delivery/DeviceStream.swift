import HTTPTypes
import Logging
import NIOCore
import PushRelayCore
import PushRelayHTTP
import PushRelayStore
import PushRelayWire

/// One device's live event stream: writes the backlog, then every message as its commit returns (handed over by
/// the commit observer, not read back from the store), heartbeats in between, until the peer goes away, another
/// stream of the device replaces it, or the node drains.
///
/// Messages are written as server-sent events, `id: <message id>` and `data: <envelope>`; the cursor only moves
/// forward within a stream, and what the device has not acknowledged comes again on its next stream.
///
/// No task waits for an idle device: the stream is a state machine on its connection's event loop, woken by its
/// ``DeliveryHub/Subscription`` through the ``EventLoopHandoff`` (the devices of one commit on one event loop share one
/// wake-up of that loop), writing through the transport's completion-based
/// `write`. Only a store read (the backlog, or catching up after falling behind) runs in a short-lived task. A
/// parked task with its stack of async frames cost about 4 kB per connected device.
final class DeviceStream: @unchecked Sendable {
    let device: Device
    let senderID: SenderID
    private let store: any PushStore
    private let hub: DeliveryHub
    private let handoff: EventLoopHandoff
    private let metrics: RelayMetrics
    private let logger: Logger

    /// How many pending messages one store read fetches.
    static let readBatch = 256

    // Confined to the writer's event loop once `start(writer:)` ran.
    private var writer: (any HTTPResponseBodyWriter)?
    private var subscription: DeliveryHub.Subscription?
    private var cursor: MessageID?
    private var ended = false

    init(
        device: Device, senderID: SenderID, store: any PushStore, hub: DeliveryHub, handoff: EventLoopHandoff,
        metrics: RelayMetrics, logger: Logger
    ) {
        self.device = device
        self.senderID = senderID
        self.store = store
        self.hub = hub
        self.handoff = handoff
        self.metrics = metrics
        self.logger = logger
    }

    /// Starts the stream on `writer` (called by the transport on the connection's event loop; returns at once).
    func start(writer: any HTTPResponseBodyWriter) {
        let eventLoop = writer.eventLoop
        self.writer = writer
        metrics.streamOpened()
        logger.debug("stream opened", metadata: logMetadata)
        // A comment first, so that the client sees the response start at once.
        var connected = ByteBuffer()
        ServerSentEventEncoder.appendComment("connected", to: &connected)
        writer.write(connected) { _ in }
        // Attaching posts the backlog read, which wakes the stream: that first pump runs after this returns.
        let handoff = self.handoff
        let (subscription, newDevice) = hub.attach(device: device.id) { [self] in
            handoff.execute(on: eventLoop) { self.pump() }
        }
        self.subscription = subscription
        if newDevice { metrics.deviceConnected() }
        writer.onClose { [self] in end() }
    }

    /// Takes the subscription's work until there is none, writing as it goes. Runs on the event loop while the
    /// subscription counts the stream as running; returns without clearing that when it waits for the transport
    /// (back-pressure) or the store, whose completion calls it again.
    private func pump() {
        guard let subscription, writer != nil else { return }
        while true {
            guard !ended else { return }
            switch subscription.next() {
            case .idle:
                return
            case .ended:
                end()
                return
            case .work(let work):
                if work.readStore {
                    // The store read continues the pump; what came meanwhile goes out after the rows it finds.
                    readStore(then: work.committed, transient: work.transient, heartbeat: work.heartbeat)
                    return
                }
                let buffer = render(work.transient, committed: work.committed, heartbeat: work.heartbeat)
                if buffer.readableBytes > 0, !write(buffer) { return }
            }
        }
    }

    /// Writes `buffer`; true when the transport took it at once (carry on), false when the completion will call
    /// ``pump()`` later or the stream ended.
    private func write(_ buffer: ByteBuffer) -> Bool {
        guard let writer else { return false }
        let outcome = WriteOutcome()
        writer.write(buffer) { [self] error in
            // Called inline (the transport could take more at once) or later on the event loop.
            if let error {
                logger.debug("stream ended", metadata: logMetadata(["relay.error": "\(error)"]))
                if outcome.returned { end() } else { outcome.failed = true }
            } else if outcome.returned {
                pump()
            } else {
                outcome.completedInline = true
            }
        }
        outcome.returned = true
        if outcome.failed { end() }
        return outcome.completedInline
    }

    /// Reads the store after the cursor in batches, writes what it finds, then the rows `committed` past it (they
    /// may have been committed after the read) and the `transient` messages, then goes on pumping.
    private func readStore(then committed: [StoredMessage], transient: [TransientMessage], heartbeat: Bool) {
        guard let writer else { return }
        let eventLoop = writer.eventLoop
        let after = cursor
        let (store, device) = (self.store, self.device.id)
        Task {
            let result: Result<[StoredMessage], any Error>
            do {
                result = .success(try await store.pendingMessages(for: device, after: after, limit: Self.readBatch))
            } catch {
                result = .failure(error)
            }
            eventLoop.execute { [self] in
                switch result {
                case .failure(let error):
                    logger.warning(
                        "stream store read failed; ending the stream", metadata: logMetadata(["relay.error": "\(error)"]))
                    end()
                case .success(let pending):
                    guard !ended else { return }
                    let more = pending.count == Self.readBatch
                    let buffer = render([], committed: pending, heartbeat: !more && heartbeat)
                    if more {
                        // The next batch once the transport has taken this one.
                        writer.write(buffer) { [self] error in
                            if error != nil {
                                end()
                            } else {
                                readStore(then: committed, transient: transient, heartbeat: heartbeat)
                            }
                        }
                        return
                    }
                    let rest = render(transient, committed: committed, heartbeat: false)
                    var all = buffer
                    all.writeImmutableBuffer(rest)
                    if all.readableBytes == 0 || write(all) { pump() }
                }
            }
        }
    }

    /// The events for `committed` (those past the cursor, which moves) and then `transient`, or a heartbeat
    /// comment when `heartbeat` and there is nothing else.
    ///
    /// Stored rows before time-to-live-0 messages: a time-to-live-0 message is numbered past every id taken when it
    /// was sent, so a stored row it overtook on the wire would have a lower id, and a client's `Last-Event-ID`
    /// naming the time-to-live-0 message acknowledges every stored id below it: written after it, such a row could
    /// be acknowledged unseen if the stream broke in between.
    private func render(_ transient: [TransientMessage], committed: [StoredMessage], heartbeat: Bool) -> ByteBuffer {
        var buffer = ByteBuffer()
        var bytes: [UInt8] = []
        var delivered = 0
        for message in committed where cursor.map({ message.id > $0 }) ?? true {
            bytes.removeAll(keepingCapacity: true)
            switch message.kind {
            case .message:
                Envelope(body: message.body).render(messageID: message.id, into: &bytes)
            case .deletedMessages:
                Envelope.deletedMessages(senderID: senderID).render(messageID: message.id, into: &bytes)
            }
            Self.appendEvent(id: message.id, envelope: bytes, to: &buffer)
            cursor = message.id
            recordSendToDeliver(message.id)
            delivered += 1
        }
        if delivered > 0 { metrics.messagesDelivered(count: delivered) }
        for message in transient {
            bytes.removeAll(keepingCapacity: true)
            Envelope(body: message.body).render(messageID: message.id, into: &bytes)
            Self.appendEvent(id: message.id, envelope: bytes, to: &buffer)
        }
        if !transient.isEmpty { metrics.messagesDelivered(count: transient.count) }
        if heartbeat && buffer.readableBytes == 0 {
            buffer.writeBytes(ServerSentEventEncoder.heartbeat)
        }
        return buffer
    }

    /// Ends the stream once: the body is finished, the subscription detached (only the detach that removes the
    /// registry entry counts the device as gone: a replacing stream keeps it connected).
    private func end() {
        guard !ended else { return }
        ended = true
        writer?.finish()
        if let subscription, hub.detach(subscription) { metrics.deviceDisconnected() }
        // The subscription's wake function and the writer's callbacks hold this stream: let both go.
        subscription = nil
        writer = nil
        metrics.streamClosed()
        logger.debug("stream closed", metadata: logMetadata)
    }

    /// The device, for log lines (built per line: a logger with metadata per stream would cost every idle device
    /// a dictionary).
    private var logMetadata: Logger.Metadata { ["relay.device": "\(device.id)"] }

    private func logMetadata(_ extra: Logger.Metadata) -> Logger.Metadata {
        logMetadata.merging(extra) { $1 }
    }

    /// Message ids are the accept time in microseconds (bumped to stay increasing), so the id tells how long a
    /// message waited between its acceptance and its delivery.
    private func recordSendToDeliver(_ id: MessageID) {
        let now = WallClock.microsecondsSinceEpoch()
        guard now >= id.rawValue else { return }
        metrics.recordSendToDeliver(duration: .microseconds(Int64(now - id.rawValue)))
    }

    /// `id: <id>\ndata: <envelope>\n\n`, as the wire module's encoder writes it (the client's parser reads it).
    static func appendEvent(id: MessageID, envelope: [UInt8], to buffer: inout ByteBuffer) {
        ServerSentEventEncoder.appendEvent(id: id.rawValue, data: envelope, to: &buffer)
    }
}

/// How one write's completion relates to the call that started it (event-loop confined).
private final class WriteOutcome: @unchecked Sendable {
    /// `write` has returned: a completion now is a later one, and resumes the pump itself.
    var returned = false
    var completedInline = false
    var failed = false
}
