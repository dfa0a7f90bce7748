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
/// `write`. A store read (the backlog, or catching up after falling behind) runs on a thread of the store's and its
/// answer comes back the same way. A parked task with its stack of async frames cost about 4 kB per connected device.
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
    /// When the stream opened (µs since the epoch, as message ids count): rows accepted before it are backlog or
    /// redeliveries, outside the send-to-deliver latency.
    private var openedAtMicros: UInt64 = 0
    private var subscription: DeliveryHub.Subscription?
    /// The stream's decisions (``DeviceStreamMachine``); this class carries out its actions.
    private var machine = DeviceStreamMachine(readBatch: DeviceStream.readBatch)

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
        openedAtMicros = WallClock.microsecondsSinceEpoch()
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
        // On a shared database, an older stream of the device on another node ends (a device holds one stream).
        store.announceStream(device: device.id, attachment: subscription.attachment)
        if newDevice { metrics.deviceConnected() }
        writer.onClose { [self] in finish(machine.end()) }
    }

    /// Takes the subscription's work until there is none, writing as it goes. Runs on the event loop while the
    /// subscription counts the stream as running; returns without clearing that when it waits for the transport
    /// (back-pressure) or the store, whose completion calls it again.
    private func pump() {
        guard let subscription, writer != nil else { return }
        while !machine.hasEnded {
            let action: DeviceStreamMachine.Action
            switch subscription.next() {
            case .idle:
                return
            case .ended:
                action = machine.end()
            case .work(let work):
                action = machine.received(work)
            }
            guard carryOut(action) else { return }
        }
    }

    /// Carries out one of the machine's actions; true when the pump may go on at once, false when a completion
    /// (a write's, a store read's) goes on later or the stream ended.
    private func carryOut(_ action: DeviceStreamMachine.Action) -> Bool {
        switch action {
        case .next:
            return true
        case .write(let batch):
            return write(render(batch))
        case .readStore(let after):
            readStore(after: after)
            return false
        case .writeThenRead(let batch, let after):
            // The next page once the transport has taken this one.
            writer?.write(render(batch)) { [self] error in
                if error != nil {
                    finish(machine.writeFailed())
                } else {
                    readStore(after: after)
                }
            }
            return false
        case .finish:
            close()
            return false
        case .none:
            return false
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
                if outcome.returned { finish(machine.writeFailed()) } else { outcome.failed = true }
            } else if outcome.returned {
                pump()
            } else {
                outcome.completedInline = true
            }
        }
        outcome.returned = true
        if outcome.failed { finish(machine.writeFailed()) }
        return outcome.completedInline
    }

    /// Reads a page of the device's pending rows after `after` on a thread of the store's (no task), its answer
    /// coming back to the stream's loop through the handoff; the machine decides what follows.
    private func readStore(after: MessageID?) {
        guard let writer else { return }
        let eventLoop = writer.eventLoop
        let handoff = self.handoff
        store.pendingMessages(for: device.id, after: after, limit: machine.readBatch) { result in
            handoff.execute(on: eventLoop) { [self] in
                switch result {
                case .failure(let error):
                    if !machine.hasEnded {
                        logger.warning(
                            "stream store read failed; ending the stream",
                            metadata: logMetadata(["relay.error": "\(error)"]))
                    }
                    finish(machine.storeReadFailed())
                case .success(let rows):
                    if carryOut(machine.storeRead(rows)) { pump() }
                }
            }
        }
    }

    /// The events of `batch`: its stored rows (recording their delivery), its time-to-live-0 messages, or the
    /// heartbeat comment.
    private func render(_ batch: DeviceStreamMachine.Batch) -> ByteBuffer {
        // Room for every event at once (its envelope, the message id it gains, the `id:`/`data:` lines): the buffer
        // is not grown and copied event by event.
        var capacity = batch.heartbeat ? ServerSentEventEncoder.heartbeat.count : 0
        var largest = 0
        for message in batch.stored {
            capacity += message.body.count + Self.eventOverhead
            largest = max(largest, message.body.count)
        }
        for message in batch.transient {
            capacity += message.body.count + Self.eventOverhead
            largest = max(largest, message.body.count)
        }
        var buffer = ByteBufferAllocator().buffer(capacity: capacity)
        // One envelope at a time, rendered into one array that holds the largest (its id and its deleted-messages
        // markers are within the event's overhead): no growth while a batch renders.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(largest + Self.eventOverhead)
        for message in batch.stored {
            bytes.removeAll(keepingCapacity: true)
            switch message.kind {
            case .message:
                Envelope(body: message.body).render(messageID: message.id, into: &bytes)
            case .deletedMessages:
                Envelope.deletedMessages(senderID: senderID).render(messageID: message.id, into: &bytes)
            }
            Self.appendEvent(id: message.id, envelope: bytes, to: &buffer)
            recordSendToDeliver(message.id)
        }
        if !batch.stored.isEmpty { metrics.messagesDelivered(count: batch.stored.count) }
        for message in batch.transient {
            bytes.removeAll(keepingCapacity: true)
            Envelope(body: message.body).render(messageID: message.id, into: &bytes)
            Self.appendEvent(id: message.id, envelope: bytes, to: &buffer)
        }
        if !batch.transient.isEmpty { metrics.messagesDelivered(count: batch.transient.count) }
        if batch.heartbeat {
            buffer.writeBytes(ServerSentEventEncoder.heartbeat)
        }
        return buffer
    }

    /// Closes the stream when the machine says so (``DeviceStreamMachine/Action/finish`` comes once).
    private func finish(_ action: DeviceStreamMachine.Action) {
        if case .finish = action { close() }
    }

    /// Closes the stream, once (the machine answers ``DeviceStreamMachine/Action/finish`` once): the body is
    /// finished, the subscription detached (only the detach that removes the registry entry counts the device as
    /// gone: a replacing stream keeps it connected).
    private func close() {
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
    /// The latency from acceptance to the first write, for messages accepted while this stream was open (a message
    /// id is its acceptance time in µs): a backlog written as a device comes online, or a message written again to
    /// a new stream, would measure how long the device was away.
    private func recordSendToDeliver(_ id: MessageID) {
        let now = WallClock.microsecondsSinceEpoch()
        guard id.rawValue >= openedAtMicros, now >= id.rawValue else { return }
        metrics.recordSendToDeliver(duration: .microseconds(Int64(now - id.rawValue)))
    }

    /// `id: <id>\ndata: <envelope>\n\n`, as the wire module's encoder writes it (the client's parser reads it).
    /// What an event adds to its stored envelope, at most: the message id in the envelope, the `id:` and `data:`
    /// lines (deleted-messages markers are built here, about this size).
    static let eventOverhead = 160

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
