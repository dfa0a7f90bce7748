import PushRelayCore
import PushRelayStore

/// The decisions of one device's event stream, without I/O: which rows go out (those past the cursor, which only
/// moves forward), in what order, when the store must be read and in what pages, when a heartbeat is due, and when
/// the stream ends.
///
/// ``DeviceStream`` feeds it what happens — work taken from the stream's ``DeliveryHub/Subscription``, the result of
/// a store read, a failed write, the end of the subscription or of the connection — and carries out the
/// ``Action`` it returns (render and write a ``Batch``, read the store, finish). It lives on the connection's event
/// loop; tests drive it directly.
///
/// Order within a batch: stored rows before time-to-live-0 messages. A time-to-live-0 message is numbered past
/// every id taken when it was sent, so a stored row it overtook on the wire would have a lower id, and a client's
/// `Last-Event-ID` naming the time-to-live-0 message acknowledges every stored id below it: written after it, such
/// a row could be acknowledged unseen if the stream broke in between.
struct DeviceStreamMachine {
    /// What the stream writes in one go, in this order: `stored` (each past the cursor, in id order), then
    /// `transient`, or only a heartbeat comment when there is nothing else.
    struct Batch {
        var stored: [StoredMessage] = []
        var transient: [TransientMessage] = []
        var heartbeat = false

        var isEmpty: Bool { stored.isEmpty && transient.isEmpty && !heartbeat }
    }

    /// What the stream does next.
    enum Action {
        /// Write the batch, then take the subscription's next work.
        case write(Batch)
        /// Nothing to write: take the subscription's next work.
        case next
        /// Read the device's pending rows after `after` from the store (at most ``readBatch``); hand the outcome to
        /// ``storeRead(_:)`` or ``storeReadFailed()``.
        case readStore(after: MessageID?)
        /// Write the batch (a full page of the store), then read the next page after `after`.
        case writeThenRead(Batch, after: MessageID?)
        /// End the stream: finish the body, detach the subscription. Returned once.
        case finish
        /// Nothing: the stream has ended.
        case none
    }

    /// What came from the subscription while the store was being read: it goes out after the rows the read finds
    /// (rows committed during the read may be among them; the cursor drops the repeats).
    private struct Carry {
        var committed: [StoredMessage] = []
        var transient: [TransientMessage] = []
        var heartbeat = false
    }

    private enum Phase {
        case streaming
        case readingStore(Carry)
        case ended
    }

    /// How many pending rows one store read asks for; a read that returns as many is followed by another.
    let readBatch: Int
    /// The id of the last stored row handed out; rows at or below it are not written again.
    private(set) var cursor: MessageID?
    private var phase = Phase.streaming

    init(readBatch: Int) {
        precondition(readBatch > 0, "a store read must ask for at least one row")
        self.readBatch = readBatch
    }

    /// True once the stream has ended (every later event answers ``Action/none``).
    var hasEnded: Bool {
        if case .ended = phase { return true }
        return false
    }

    /// Work taken from the subscription.
    mutating func received(_ work: DeliveryHub.Subscription.Work) -> Action {
        switch phase {
        case .ended:
            return .none
        case .readingStore(var carry):
            // Not expected (the stream does not take work while it reads), but nothing may be lost if it happens.
            carry.committed += work.committed
            carry.transient += work.transient
            carry.heartbeat = carry.heartbeat || work.heartbeat
            phase = .readingStore(carry)
            return .none
        case .streaming:
            if work.readStore {
                phase = .readingStore(Carry(committed: work.committed, transient: work.transient, heartbeat: work.heartbeat))
                return .readStore(after: cursor)
            }
            let batch = take(stored: work.committed, transient: work.transient, heartbeat: work.heartbeat)
            return batch.isEmpty ? .next : .write(batch)
        }
    }

    /// The rows a store read returned (in id order).
    mutating func storeRead(_ rows: [StoredMessage]) -> Action {
        guard case .readingStore(let carry) = phase else { return .none }
        if rows.count >= readBatch {
            // A full page: there may be more. What came meanwhile waits for the last page.
            let page = take(stored: rows, transient: [], heartbeat: false)
            return .writeThenRead(page, after: cursor)
        }
        phase = .streaming
        let batch = take(stored: rows + carry.committed, transient: carry.transient, heartbeat: carry.heartbeat)
        return batch.isEmpty ? .next : .write(batch)
    }

    /// The store read failed: the stream ends (the device reconnects and reads again).
    mutating func storeReadFailed() -> Action {
        end()
    }

    /// The transport failed a write (the peer went away): the stream ends.
    mutating func writeFailed() -> Action {
        end()
    }

    /// The subscription ended (another stream of the device replaced this one, or the node drains) or the
    /// connection closed: ``Action/finish`` the first time, ``Action/none`` after.
    mutating func end() -> Action {
        if hasEnded { return .none }
        phase = .ended
        return .finish
    }

    /// The batch of `stored` rows past the cursor (moving it) and `transient` messages; a heartbeat only when there
    /// is nothing else to write.
    private mutating func take(stored: [StoredMessage], transient: [TransientMessage], heartbeat: Bool) -> Batch {
        var batch = Batch()
        for row in stored where cursor.map({ row.id > $0 }) ?? true {
            batch.stored.append(row)
            cursor = row.id
        }
        batch.transient = transient
        batch.heartbeat = heartbeat && batch.stored.isEmpty && batch.transient.isEmpty
        return batch
    }
}
