import NIOConcurrencyHelpers
import PushRelayCore

/// The streams this node opened and has not announced yet (``PostgresStore/announceStream(device:attachment:)``),
/// sent as few `NOTIFY`s as possible: while one is on its way, the streams opened meanwhile wait and go together in
/// the next, as writes do in a group commit. A reconnection storm (a node restarted, its devices back on the others)
/// then costs a `NOTIFY` per batch, not one transaction per stream.
///
/// Payload: `node s device,device,… attachment,attachment,…` (four fields: nodes of earlier releases take three or
/// five and ignore it), at most ``maxPayloadBytes`` long; a longer batch is split.
final class PostgresStreamAnnouncements: Sendable {
    private struct State {
        var pending: [(device: Int64, attachment: UInt64)] = []
        var flushing = false
    }

    private let state = NIOLockedValueBox(State())
    /// Well under PostgreSQL's 8,000-byte payload limit.
    static let maxPayloadBytes = 7_000

    /// Adds a stream; true when no flush is running and the caller starts one (``next()`` until it answers nil).
    func add(device: DeviceID, attachment: UInt64) -> Bool {
        state.withLockedValue { state in
            state.pending.append((device.rawValue, attachment))
            if state.flushing { return false }
            state.flushing = true
            return true
        }
    }

    /// Takes what is pending, or ends the flush (nil) when nothing is.
    func next() -> [(device: Int64, attachment: UInt64)]? {
        state.withLockedValue { state in
            guard !state.pending.isEmpty else {
                state.flushing = false
                return nil
            }
            defer { state.pending = [] }
            return state.pending
        }
    }

    /// The payloads that announce `streams` for `node`, in order.
    static func payloads(node: String, _ streams: [(device: Int64, attachment: UInt64)]) -> [String] {
        var payloads: [String] = []
        var devices: [String] = []
        var attachments: [String] = []
        var length = node.utf8.count + 4
        for (device, attachment) in streams {
            let d = String(device)
            let a = String(attachment)
            if !devices.isEmpty, length + d.utf8.count + a.utf8.count + 2 > maxPayloadBytes {
                payloads.append("\(node) s \(devices.joined(separator: ",")) \(attachments.joined(separator: ","))")
                devices = []
                attachments = []
                length = node.utf8.count + 4
            }
            devices.append(d)
            attachments.append(a)
            length += d.utf8.count + a.utf8.count + 2
        }
        if !devices.isEmpty {
            payloads.append("\(node) s \(devices.joined(separator: ",")) \(attachments.joined(separator: ","))")
        }
        return payloads
    }

    /// The streams of a payload's device and attachment fields; nil when they are not this format.
    static func parse(devices: Substring, attachments: Substring) -> [(device: DeviceID, attachment: UInt64)]? {
        let ids = devices.split(separator: ",").map { Int64($0) }
        let numbers = attachments.split(separator: ",").map { UInt64($0) }
        guard ids.count == numbers.count, !ids.isEmpty else { return nil }
        var streams: [(device: DeviceID, attachment: UInt64)] = []
        streams.reserveCapacity(ids.count)
        for (id, number) in zip(ids, numbers) {
            guard let id, let number else { return nil }
            streams.append((DeviceID(rawValue: id), number))
        }
        return streams
    }
}
