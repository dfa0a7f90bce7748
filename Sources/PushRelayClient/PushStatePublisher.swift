
/// The one source of truth for observers: the current state, and everyone who follows it.
///
/// ``publish(_:)`` runs on the main actor and, for each state, in this order: updates every attached
/// ``SalesMessageViewModel`` (which tells its delegate), then yields to every ``states()`` stream, then, for a
/// ``PushClientState/received(_:messageID:)``, to every ``salesNotifications()`` stream, and, for every message,
/// to every ``notifications(of:key:)`` stream whose key the message carries. The client awaits each
/// publication before it handles the next event, so every observer sees the same states in the same order.
final class PushStatePublisher: Sendable {
    private struct Subscribers {
        var state: PushClientState = .idle
        var nextID = 0
        var states: [Int: AsyncStream<PushClientState>.Continuation] = [:]
        var notifications: [Int: AsyncStream<ReceivedSalesNotification>.Continuation] = [:]
        var messages: [Int: MessageSubscriber] = [:]
    }

    /// A follower of every message: what to do with one, and how to end.
    private struct MessageSubscriber {
        var receive: @Sendable (PushMessage) -> Void
        var finish: @Sendable () -> Void
    }

    private let subscribers = LockedValue(Subscribers())
    #if canImport(Observation)
    private let viewModels = AttachedViewModels()
    #endif

    /// The last published state.
    var state: PushClientState { subscribers.withLockedValue { $0.state } }

    /// A new stream of states, starting with the current one.
    func states() -> AsyncStream<PushClientState> {
        let (stream, continuation) = AsyncStream.makeStream(of: PushClientState.self, bufferingPolicy: .unbounded)
        let id = subscribers.withLockedValue { subscribers in
            defer { subscribers.nextID += 1 }
            subscribers.states[subscribers.nextID] = continuation
            continuation.yield(subscribers.state)
            return subscribers.nextID
        }
        continuation.onTermination = { [weak self] _ in
            self?.subscribers.withLockedValue { _ = $0.states.removeValue(forKey: id) }
        }
        return stream
    }

    /// A new stream of the sales notifications received from now on.
    func salesNotifications() -> AsyncStream<ReceivedSalesNotification> {
        let (stream, continuation) = AsyncStream.makeStream(of: ReceivedSalesNotification.self,
                                                            bufferingPolicy: .unbounded)
        let id = subscribers.withLockedValue { subscribers in
            defer { subscribers.nextID += 1 }
            subscribers.notifications[subscribers.nextID] = continuation
            return subscribers.nextID
        }
        continuation.onTermination = { [weak self] _ in
            self?.subscribers.withLockedValue { _ = $0.notifications.removeValue(forKey: id) }
        }
        return stream
    }

    #if canImport(Observation)
    /// A new stream of the payloads under `key` of the messages received from now on; a message without the key, or
    /// whose value does not decode as `Payload`, is left out.
    func notifications<Payload: Decodable & Sendable>(
        of type: Payload.Type, key: String
    ) -> AsyncStream<ReceivedNotification<Payload>> {
        let (stream, continuation) = AsyncStream.makeStream(of: ReceivedNotification<Payload>.self,
                                                            bufferingPolicy: .unbounded)
        let subscriber = MessageSubscriber(
            receive: { message in
                guard let payload = try? message.decode(Payload.self, forKey: key) else { return }
                continuation.yield(ReceivedNotification(messageID: message.id, payload: payload, message: message))
            },
            finish: { continuation.finish() })
        let id = subscribers.withLockedValue { subscribers in
            defer { subscribers.nextID += 1 }
            subscribers.messages[subscribers.nextID] = subscriber
            return subscribers.nextID
        }
        continuation.onTermination = { [weak self] _ in
            self?.subscribers.withLockedValue { _ = $0.messages.removeValue(forKey: id) }
        }
        return stream
    }

    /// Makes `viewModel` follow the states (held weakly); it takes the current state at once.
    @MainActor
    func attach(_ viewModel: SalesMessageViewModel) {
        viewModels.append(viewModel)
        viewModel.apply(state)
    }
    #endif

    /// Publishes `state` to every observer, on the main actor, in the documented order.
    @MainActor
    func publish(_ state: PushClientState, message: PushMessage? = nil) {
        #if canImport(Observation)
        viewModels.apply(state)
        #endif
        subscribers.withLockedValue { subscribers in
            subscribers.state = state
            for continuation in subscribers.states.values { continuation.yield(state) }
            if case .received(let notification, let messageID) = state {
                let received = ReceivedSalesNotification(messageID: messageID, notification: notification)
                for continuation in subscribers.notifications.values { continuation.yield(received) }
            }
            if let message {
                for subscriber in subscribers.messages.values { subscriber.receive(message) }
            }
        }
    }

    /// Ends every stream (the client is gone).
    func finish() {
        let (states, notifications, messages) = subscribers.withLockedValue { subscribers in
            defer {
                subscribers.states.removeAll()
                subscribers.notifications.removeAll()
                subscribers.messages.removeAll()
            }
            return (Array(subscribers.states.values), Array(subscribers.notifications.values),
                    Array(subscribers.messages.values))
        }
        for continuation in states { continuation.finish() }
        for continuation in notifications { continuation.finish() }
        for subscriber in messages { subscriber.finish() }
    }
}

#if canImport(Observation)
/// The view models that follow a client, held weakly, touched only on the main actor.
@MainActor
private final class AttachedViewModels {
    private struct Weak {
        weak var viewModel: SalesMessageViewModel?
    }

    private var items: [Weak] = []

    nonisolated init() {}

    func append(_ viewModel: SalesMessageViewModel) {
        items.removeAll { $0.viewModel == nil }
        items.append(Weak(viewModel: viewModel))
    }

    func apply(_ state: PushClientState) {
        for item in items {
            item.viewModel?.apply(state)
        }
    }
}
#endif
