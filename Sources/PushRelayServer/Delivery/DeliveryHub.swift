import NIOConcurrencyHelpers
import PushRelayCore
import PushRelayStore

/// A message handed to a live stream without going through the store: a time-to-live-0 message ("now or
/// never"), never stored.
struct TransientMessage: Sendable {
    var id: MessageID
    var body: [UInt8]
}

/// The registry of live device streams on this node.
///
/// Streams learn what to do through a ``Subscription``: a wake-up signal plus the work accumulated since the last
/// one. The store's commit observer hands each committed row to its device's stream (``deliver(_:)``), which writes
/// it without reading the store back; a stream that falls behind by more than ``Subscription/committedLimit`` rows
/// drops them and reads the store from its cursor instead, so a slow stream costs bounded memory however many
/// wake-ups it misses. One stream per device: attaching a second one replaces (ends) the first, and on a shared
/// database a stream opened on another node ends the older one here (``openedElsewhere(device:)``).
final class DeliveryHub: Sendable {
    /// One attached stream, and the work accumulated for it.
    ///
    /// Posting work runs the stream's `wake` function unless the stream is already running (then it finds the
    /// work on its next ``next()``); a stream runs until ``next()`` answers ``Next/idle``, which atomically marks
    /// it not running, so no wake-up is lost and none is doubled. Ending the subscription (replaced, detached,
    /// drained) wakes the stream too, and ``next()`` then answers ``Next/ended``.
    final class Subscription: Sendable {
        /// What a stream has to do after a wake-up.
        struct Work: Sendable {
            /// The store has messages the stream has not read yet (the backlog, or rows dropped from ``committed``).
            var readStore = false
            /// Rows committed since the last wake-up, in id order; the stream writes those past its cursor.
            var committed: [StoredMessage] = []
            /// Time to write a heartbeat comment.
            var heartbeat = false
            /// Time-to-live-0 messages to write now.
            var transient: [TransientMessage] = []

            var isEmpty: Bool { !readStore && !heartbeat && committed.isEmpty && transient.isEmpty }
        }

        /// What ``next()`` hands the stream.
        enum Next: Sendable {
            /// Something to do; call ``next()`` again when done.
            case work(Work)
            /// Nothing to do: the stream is no longer running; a later post wakes it.
            case idle
            /// The subscription ended: end the stream.
            case ended
        }

        private struct State {
            var work = Work()
            var running = false
            var ended = false
            /// Its announcement to the other nodes came back (``DeliveryHub/announced(device:attachment:)``).
            var announced = false
        }

        let device: DeviceID
        let attachment: UInt64
        private let state = NIOLockedValueBox(State())
        private let wake: @Sendable () -> Void

        /// At most this many transient messages wait for a slow stream; older ones are dropped (they are
        /// "now or never" by definition).
        static let transientLimit = 64
        /// At most this many committed rows wait for a slow stream; past it they are dropped and the stream reads
        /// the store instead (nothing is lost: they are committed).
        static let committedLimit = 256

        fileprivate init(device: DeviceID, attachment: UInt64, wake: @escaping @Sendable () -> Void) {
            self.device = device
            self.attachment = attachment
            self.wake = wake
        }

        /// Takes (and clears) what has accumulated, or stops the stream running when there is nothing.
        func next() -> Next {
            state.withLockedValue { state in
                if state.ended {
                    state.running = false
                    return .ended
                }
                if state.work.isEmpty {
                    state.running = false
                    return .idle
                }
                defer { state.work = Work() }
                return .work(state.work)
            }
        }

        fileprivate func post(_ update: (inout Work) -> Void) {
            let wakeNow = state.withLockedValue { state -> Bool in
                guard !state.ended else { return false }
                update(&state.work)
                return Self.claim(&state)
            }
            if wakeNow { wake() }
        }

        fileprivate func end() {
            let wakeNow = state.withLockedValue { state -> Bool in
                guard !state.ended else { return false }
                state.ended = true
                state.work = Work()
                return Self.claim(&state)
            }
            if wakeNow { wake() }
        }

        fileprivate func markAnnounced() {
            state.withLockedValue { $0.announced = true }
        }

        fileprivate var isAnnounced: Bool {
            state.withLockedValue { $0.announced }
        }

        /// Marks the stream running; true when it was not (the caller wakes it).
        private static func claim(_ state: inout State) -> Bool {
            if state.running { return false }
            state.running = true
            return true
        }
    }

    private struct State {
        var subscriptions: [DeviceID: Subscription] = [:]
        var nextAttachment: UInt64 = 1
        var draining = false
    }

    private let state = NIOLockedValueBox(State())

    init() {}

    /// The number of devices with a live stream on this node.
    var connectedDevices: Int { state.withLockedValue { $0.subscriptions.count } }

    /// The devices holding a stream now.
    var connectedDeviceIDs: [DeviceID] { state.withLockedValue { Array($0.subscriptions.keys) } }

    /// Those of `devices` that hold a stream now, in their order.
    func streaming(among devices: [DeviceID]) -> [DeviceID] {
        state.withLockedValue { state in devices.filter { state.subscriptions[$0] != nil } }
    }

    /// Attaches a stream for `device`, replacing (and ending) any earlier stream of the same device; `wake` is how
    /// the subscription starts the stream when work arrives (see ``Subscription``). The new subscription starts
    /// with `readStore` set, so the stream is woken at once and reads the backlog first. `newDevice` is `true` when
    /// the device had no live stream here (it counts as newly connected).
    func attach(
        device: DeviceID,
        wake: @escaping @Sendable () -> Void
    ) -> (subscription: Subscription, newDevice: Bool) {
        let (subscription, previous, draining) = state.withLockedValue { state in
            let subscription = Subscription(device: device, attachment: state.nextAttachment, wake: wake)
            state.nextAttachment += 1
            let previous = state.draining ? nil : state.subscriptions.updateValue(subscription, forKey: device)
            return (subscription, previous, state.draining)
        }
        previous?.end()
        if draining {
            subscription.end()
        } else {
            subscription.post { $0.readStore = true }
        }
        return (subscription, !draining && previous == nil)
    }

    /// Detaches a stream and ends its subscription; the registry entry is removed only if no newer stream replaced it.
    /// Returns `true` when this removed the device's entry (the device is no longer connected here); a second
    /// call for the same subscription returns `false`.
    @discardableResult
    func detach(_ subscription: Subscription) -> Bool {
        let removed = state.withLockedValue { state in
            guard state.subscriptions[subscription.device] === subscription else { return false }
            state.subscriptions.removeValue(forKey: subscription.device)
            return true
        }
        subscription.end()
        return removed
    }

    /// Hands rows just committed to their devices' live streams (those on this node); called by the store's commit
    /// observer on its writer thread, so it only appends and signals.
    func deliver(_ committed: [StoredMessage]) {
        let subscriptions = state.withLockedValue { state in committed.map { state.subscriptions[$0.device] } }
        for (message, subscription) in zip(committed, subscriptions) {
            guard let subscription else { continue }
            subscription.post { work in
                if work.readStore { return }  // the store read to come covers it
                if work.committed.count >= Subscription.committedLimit {
                    work.committed.removeAll()
                    work.readStore = true
                } else {
                    work.committed.append(message)
                }
            }
        }
    }

    /// Tells the devices' live streams (if any are on this node) to read the store.
    func wake(devices: some Sequence<DeviceID>) {
        let subscriptions = state.withLockedValue { state in devices.compactMap { state.subscriptions[$0] } }
        for subscription in subscriptions {
            subscription.post { work in
                work.readStore = true
                work.committed.removeAll()  // the read finds them
            }
        }
    }

    /// Ends the live streams of these devices (on this node): they no longer exist (unregistered, expired, their
    /// project deleted), and a removed device's stream must not outlive it. Each stream detaches as it ends.
    func end(devices: some Sequence<DeviceID>) {
        let subscriptions = state.withLockedValue { state in devices.compactMap { state.subscriptions[$0] } }
        for subscription in subscriptions { subscription.end() }
    }

    /// The announcement of the device's stream `attachment` (``PushStore/announceStream(device:attachment:)``) came
    /// back through the channel the nodes share: from now on, an announcement by another node comes after it.
    func announced(device: DeviceID, attachment: UInt64) {
        let subscription = state.withLockedValue { $0.subscriptions[device] }
        guard let subscription, subscription.attachment == attachment else { return }
        subscription.markAnnounced()
    }

    /// Another node announced a stream of `device`. The stream here ends if its own announcement came back first:
    /// it is the older one. One whose announcement has not come back yet was announced after the other node's (the
    /// channel is ordered) and stays; the other node ends its stream when that announcement reaches it. Returns
    /// whether a stream ended; it detaches as it ends.
    @discardableResult
    func openedElsewhere(device: DeviceID) -> Bool {
        let subscription = state.withLockedValue { $0.subscriptions[device] }
        guard let subscription, subscription.isAnnounced else { return false }
        subscription.end()
        return true
    }

    /// Tells every live stream on this node to read the store (commits of other nodes may have been missed).
    func wakeAll() {
        let devices = state.withLockedValue { Array($0.subscriptions.keys) }
        wake(devices: devices)
    }

    /// Hands a time-to-live-0 message to the device's live stream. Returns `false` when the device has no live
    /// stream here (the message is then dropped, as FCM does).
    @discardableResult
    func deliverTransient(_ message: TransientMessage, to device: DeviceID) -> Bool {
        guard let subscription = state.withLockedValue({ $0.subscriptions[device] }) else { return false }
        subscription.post { work in
            if work.transient.count >= Subscription.transientLimit { work.transient.removeFirst() }
            work.transient.append(message)
        }
        return true
    }

    /// Asks every live stream to write a heartbeat.
    func heartbeat() {
        let subscriptions = state.withLockedValue { Array($0.subscriptions.values) }
        for subscription in subscriptions { subscription.post { $0.heartbeat = true } }
    }

    /// Ends every live stream and refuses new ones (they end at once): the graceful shutdown's first step, so
    /// clients reconnect to another node. The ended streams leave the registry as they detach.
    func drain() {
        let subscriptions = state.withLockedValue { state -> [Subscription] in
            state.draining = true
            return Array(state.subscriptions.values)
        }
        for subscription in subscriptions { subscription.end() }
    }
}
