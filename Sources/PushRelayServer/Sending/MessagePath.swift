import NIOCore
import PushRelayCore
import PushRelayStore

/// The durable part of a send, below any route: commit every copy in one group commit, hand the time-to-live-0
/// copies to live streams, and answer on the event loop that asked, without a task.
///
/// A route validates and resolves on its connection's event loop (``PushStore/cachedProject(serverKey:)``,
/// ``PushStore/cachedDevices(tokens:)``), then calls ``commit(_:on:completion:)``: the store's writer takes the
/// copies with the rest of its group, and after the fsync the completion runs on that event loop through the
/// ``EventLoopHandoff``, so a whole group's answers to one loop cost one wake-up. The FCM legacy route uses it; a
/// second send API (FCM HTTP v1) rides the same path.
///
/// A class for the reason ``SendRoute`` is one: captured by each send's closures, it costs one reference count.
final class MessagePath: Sendable {
    let store: any PushStore
    let hub: DeliveryHub
    let metrics: RelayMetrics
    let handoff: EventLoopHandoff

    init(store: any PushStore, hub: DeliveryHub, metrics: RelayMetrics, handoff: EventLoopHandoff) {
        self.store = store
        self.hub = hub
        self.metrics = metrics
        self.handoff = handoff
    }

    /// Commits `messages` and calls `completion` on `eventLoop` with one outcome per message (or the error that
    /// failed the commit: nothing was stored).
    func commit(
        _ messages: [NewMessage],
        on eventLoop: any EventLoop,
        completion: @escaping @Sendable (Result<[EnqueueResult], any Error>) -> Void
    ) {
        commit(messages) { [handoff] result in
            handoff.execute(on: eventLoop) { completion(result) }
        }
    }

    /// `completion` runs on the store's writer thread (or at once when nothing is stored).
    private func commit(
        _ messages: [NewMessage],
        completion: @escaping @Sendable (Result<[EnqueueResult], any Error>) -> Void
    ) {
        let started = ContinuousClock.now
        store.enqueue(messages) { [self] result in
            metrics.recordCommit(duration: ContinuousClock.now - started)
            if case .success(let outcomes) = result {
                var dropped = 0
                for (message, outcome) in zip(messages, outcomes) {
                    guard case .transient(let id) = outcome else { continue }
                    if !hub.deliverTransient(TransientMessage(id: id, body: message.body), to: message.device) {
                        dropped += 1  // time to live 0 and no live stream here: dropped, as FCM does
                    }
                }
                if dropped > 0 { metrics.messagesDropped(reason: .ttlZero, count: dropped) }
            }
            completion(result)
        }
    }
}
