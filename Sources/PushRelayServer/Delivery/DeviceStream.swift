import HTTPTypes
import Logging
import NIOCore
import PushRelayCore
import PushRelayHTTP
import PushRelayStore

/// One device's live event stream: writes the backlog, then every message as its commit returns (handed over by
/// the commit observer, not read back from the store), heartbeats in between, until the peer goes away, another stream of the device replaces it, or the node drains.
///
/// Messages are written as server-sent events, `id: <message id>` and `data: <envelope>`; the cursor only moves
/// forward within a stream, and what the device has not acknowledged comes again on its next stream.
struct DeviceStream: Sendable {
    let device: Device
    let senderID: SenderID
    let store: any PushStore
    let hub: DeliveryHub
    let metrics: RelayMetrics
    let logger: Logger

    /// How many pending messages one store read fetches.
    static let readBatch = 256

    func run(writer: any HTTPResponseBodyWriter) async throws {
        let (subscription, newDevice) = hub.attach(device: device.id)
        metrics.streamOpened()
        if newDevice { metrics.deviceConnected() }
        // Both the close callback below and the end of this handler detach; only the one that removes the
        // registry entry counts the device as gone (a replacing stream keeps it connected).
        let disconnect: @Sendable (DeliveryHub.Subscription) -> Void = { [hub, metrics] subscription in
            if hub.detach(subscription) { metrics.deviceDisconnected() }
        }
        defer {
            disconnect(subscription)
            metrics.streamClosed()
        }
        logger.debug("stream opened")

        // A comment first, so that the client sees the response start at once.
        try await writer.write(ByteBuffer(string: ": connected\n\n"))

        // End the stream's signals as soon as the peer goes away, so the loop below returns. A callback, not a
        // watcher task: one task per idle device is what a connection costs beyond its buffers.
        writer.onClose { disconnect(subscription) }
        do {
            try await deliver(subscription, writer: writer)
        } catch {
            logger.debug("stream ended", metadata: ["relay.error": "\(error)"])
        }
        logger.debug("stream closed")
    }

    private func deliver(_ subscription: DeliveryHub.Subscription, writer: any HTTPResponseBodyWriter) async throws {
        var cursor: MessageID? = nil
        // Both start empty and are dropped after each write: an idle stream holds no buffer (the transport keeps
        // the written one until it is sent, so reusing it would copy on the next write anyway).
        var buffer = ByteBuffer()
        var bytes: [UInt8] = []
        for await _ in subscription.signals {
            let work = subscription.takeWork()
            buffer = ByteBuffer()
            for message in work.transient {
                bytes.removeAll(keepingCapacity: true)
                Envelope(body: message.body).render(messageID: message.id, into: &bytes)
                Self.appendEvent(id: message.id, envelope: bytes, to: &buffer)
                metrics.messagesDelivered(count: 1)
            }
            if work.readStore {
                while true {
                    let pending = try await store.pendingMessages(for: device.id, after: cursor, limit: Self.readBatch)
                    for message in pending {
                        render(message, into: &bytes)
                        Self.appendEvent(id: message.id, envelope: bytes, to: &buffer)
                        cursor = message.id
                        recordSendToDeliver(message.id)
                    }
                    if !pending.isEmpty { metrics.messagesDelivered(count: pending.count) }
                    if pending.count < Self.readBatch { break }
                    try await writer.write(buffer)
                    buffer.clear()
                }
            }
            // Rows handed over by the commit observer; those at or before the cursor came with the store read.
            var handedOver = 0
            for message in work.committed where cursor.map({ message.id > $0 }) ?? true {
                render(message, into: &bytes)
                Self.appendEvent(id: message.id, envelope: bytes, to: &buffer)
                cursor = message.id
                recordSendToDeliver(message.id)
                handedOver += 1
            }
            if handedOver > 0 { metrics.messagesDelivered(count: handedOver) }
            if work.heartbeat && buffer.readableBytes == 0 {
                buffer.writeStaticString(":\n\n")
            }
            if buffer.readableBytes > 0 {
                try await writer.write(buffer)
            }
            bytes = []
        }
    }

    /// The envelope of a stored row into `bytes` (replacing what it held).
    private func render(_ message: StoredMessage, into bytes: inout [UInt8]) {
        bytes.removeAll(keepingCapacity: true)
        switch message.kind {
        case .message:
            Envelope(body: message.body).render(messageID: message.id, into: &bytes)
        case .deletedMessages:
            Envelope.deletedMessages(senderID: senderID).render(messageID: message.id, into: &bytes)
        }
    }

    /// Message ids are the accept time in microseconds (bumped to stay increasing), so the id tells how long a
    /// message waited between its acceptance and its delivery.
    private func recordSendToDeliver(_ id: MessageID) {
        let now = WallClock.microsecondsSinceEpoch()
        guard now >= id.rawValue else { return }
        metrics.recordSendToDeliver(duration: .microseconds(Int64(now - id.rawValue)))
    }

    /// `id: <id>\ndata: <envelope>\n\n`. The envelope is one line of JSON, so one `data:` line carries it.
    static func appendEvent(id: MessageID, envelope: [UInt8], to buffer: inout ByteBuffer) {
        buffer.writeStaticString("id: ")
        buffer.writeString(id.description)
        buffer.writeStaticString("\ndata: ")
        buffer.writeBytes(envelope)
        buffer.writeStaticString("\n\n")
    }
}
