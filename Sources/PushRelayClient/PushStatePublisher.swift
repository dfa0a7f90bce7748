
/// The one source of truth for observers: the current state, and everyone who follows it.
///
/// ``publish(_:message:)`` runs on the main actor and, for each state, in this order: updates every attached
/// ``SalesMessageViewModel`` (which tells its delegate), then hands the state (and the message, when a message
/// arrived) to every stream, in the order the streams were made: ``states()`` streams yield every state,
/// ``salesNotifications()`` streams each ``PushClientState/received(_:messageID:)``, ``notifications(of:key:)``
/// streams each message that carries their key. The client awaits each publication before it handles the next
/// event, so every observer sees the same states in the same order.
final class PushStatePublisher: Sendable {
    /// One stream: what it does with a publication, and how it ends.
    private struct Follower {
        var receive: @Sendable (_ state: PushClientState, _ message: PushMessage?) -> Void
        var finish: @Sendable () -> Void
    }

    private struct Followers {
        var state: PushClientState = .idle
        var nextID = 0
        var all: [Int: Follower] = [:]
    }

    private let followers = LockedValue(Followers())
    #if canImport(Observation)
    private let viewModels = AttachedViewModels()
    #endif

    /// The last published state.
    var state: PushClientState { followers.withLockedValue { $0.state } }

    /// A new stream of states, starting with the current one.
    func states() -> AsyncStream<PushClientState> {
        follow(PushClientState.self, startingWithTheState: true) { state, _, continuation in
            continuation.yield(state)
        }
    }

    /// A new stream of the sales notifications received from now on.
    func salesNotifications() -> AsyncStream<ReceivedSalesNotification> {
        follow(ReceivedSalesNotification.self) { state, _, continuation in
            guard case .received(let notification, let messageID) = state else { return }
            continuation.yield(ReceivedSalesNotification(messageID: messageID, notification: notification))
        }
    }

    /// A new stream of the payloads under `key` of the messages received from now on; a message without the key, or
    /// whose value does not decode as `Payload`, is left out.
    func notifications<Payload: Decodable & Sendable>(
        of type: Payload.Type, key: String
    ) -> AsyncStream<ReceivedNotification<Payload>> {
        follow(ReceivedNotification<Payload>.self) { _, message, continuation in
            guard let message, let payload = try? message.decode(Payload.self, forKey: key) else { return }
            continuation.yield(ReceivedNotification(messageID: message.id, payload: payload, message: message))
        }
    }

    /// A new stream fed by `receive` from every publication, until the publisher finishes or the stream is dropped.
    private func follow<Element>(
        _ type: Element.Type, startingWithTheState: Bool = false,
        _ receive: @escaping @Sendable (PushClientState, PushMessage?, AsyncStream<Element>.Continuation) -> Void
    ) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .unbounded)
        let follower = Follower(receive: { receive($0, $1, continuation) }, finish: { continuation.finish() })
        let id = followers.withLockedValue { followers in
            defer { followers.nextID += 1 }
            followers.all[followers.nextID] = follower
            if startingWithTheState { follower.receive(followers.state, nil) }
            return followers.nextID
        }
        continuation.onTermination = { [weak self] _ in
            self?.followers.withLockedValue { _ = $0.all.removeValue(forKey: id) }
        }
        return stream
    }

    #if canImport(Observation)
    /// Makes `viewModel` follow the states (held weakly); it takes the current state at once.
    @MainActor
    func attach(_ viewModel: SalesMessageViewModel) {
        viewModels.append(viewModel)
        viewModel.apply(state)
    }
    #endif

    /// Publishes `state` (and the `message` that caused it) to every observer, on the main actor, in the documented
    /// order.
    @MainActor
    func publish(_ state: PushClientState, message: PushMessage? = nil) {
        #if canImport(Observation)
        viewModels.apply(state)
        #endif
        followers.withLockedValue { followers in
            followers.state = state
            for id in followers.all.keys.sorted() { followers.all[id]?.receive(state, message) }
        }
    }

    /// Ends every stream (the client is gone).
    func finish() {
        let all = followers.withLockedValue { followers in
            defer { followers.all.removeAll() }
            return Array(followers.all.values)
        }
        for follower in all { follower.finish() }
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
