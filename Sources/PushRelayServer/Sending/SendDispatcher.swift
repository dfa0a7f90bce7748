import Logging
import NIOCore
import PushRelayCore
import PushRelayStore

/// The send machinery below the send routes, shared by the FCM legacy route (`/fcm/send`) and the HTTP v1 route
/// (`messages:send`): resolve the tokens, or a device group's members (`NotRegistered`, `MismatchSenderId`,
/// `InvalidPackageName`), build the envelope once, commit every copy in one group commit (or the topic message row),
/// hand time-to-live-0 copies to live streams, and give each target its message id. Routes parse and answer in their own wire format; everything
/// between is here, once.
///
/// One path: ``dispatchOnLoop(_:project:on:completion:)`` (no task: the tokens from memory or a store thread, the
/// answer completed on the loop after the commit); ``dispatch(_:project:on:)`` awaits it for a route already in a
/// task (its credential had to be read).
///
/// A class for the reason ``SendRoute`` is one: captured by each send's closures, it costs one reference count.
final class SendDispatcher: Sendable {
    let store: any PushStore
    let path: MessagePath
    let metrics: RelayMetrics
    /// The per-device and per-topic message rates.
    let quotas: SendQuotas

    init(store: any PushStore, path: MessagePath, metrics: RelayMetrics, quotas: SendQuotas) {
        self.store = store
        self.path = path
        self.metrics = metrics
        self.quotas = quotas
    }

    /// What a dispatched send gives its route.
    enum Outcome: Sendable {
        /// One result per token recipient, in request order.
        case tokens(FCMSendResponse)
        /// The topic or condition answer.
        case topic(FCMTopicResponse)
        /// A device group's answer: one result per member, in member order.
        case deviceGroup(FCMDeviceGroupResponse)
    }

    /// ``dispatchOnLoop(_:project:on:completion:)`` awaited, for a route already in a task (its credential had to be
    /// read): the same path, started on `eventLoop`. Throws ``FCMError/invalidParameters(_:)`` for a condition that a
    /// device subscribed to none of its topics would satisfy, ``ProjectQuotaExceeded``, and the store's errors
    /// (`unavailable`, `closed`).
    func dispatch(_ send: FCMSendRequest, project: Project, on eventLoop: any EventLoop) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            eventLoop.execute { [self] in
                dispatchOnLoop(send, project: project, on: eventLoop) { continuation.resume(with: $0) }
            }
        }
    }

    /// The event-loop path of a send: validates, looks the tokens up — in memory, or on a thread of the store's
    /// (``PushStore/resolveTokens(_:completion:)``) whose answer comes back to `eventLoop` —, commits through
    /// ``MessagePath`` and calls `completion` on `eventLoop` after the commit (or at once when nothing is to be
    /// committed), without a task. A topic or condition send's row goes through
    /// ``PushStore/enqueueTopicMessage(_:completion:)``, a device group's members come through
    /// ``PushStore/deviceGroup(notificationKey:completion:)``.
    func dispatchOnLoop(
        _ send: FCMSendRequest,
        project: Project,
        on eventLoop: any EventLoop,
        completion: @escaping @Sendable (Result<Outcome, any Error>) -> Void
    ) {
        let recipients: [FCMRecipient]
        switch send.addressing {
        case .tokens(let tokens):
            recipients = tokens
        case .topic, .condition:
            return dispatchTopicOnLoop(send, project: project, on: eventLoop, completion: completion)
        case .deviceGroup(let key):
            return dispatchGroupOnLoop(send, key: key, project: project, on: eventLoop, completion: completion)
        }
        let tokenSend = TokenSend(recipients: recipients)
        do {
            try admitProject(send, project: project, count: tokenSend.lookups.count)
        } catch {
            return completion(.failure(error))
        }
        if let devices = store.cachedDevices(tokens: tokenSend.tokens) {
            return commit(tokenSend, devices.lazy.map(Optional.some), send, project, on: eventLoop, completion)
        }
        store.resolveTokens(tokenSend.tokens) { [self] result in
            eventLoop.execute { [self] in
                switch result {
                case .failure(let error): completion(.failure(error))
                case .success(let devices): commit(tokenSend, devices, send, project, on: eventLoop, completion)
                }
            }
        }
    }

    /// A send to a device group: a copy to each member, exactly as a send to the members' tokens in
    /// `registration_ids` (the same quotas, queue rules and one group commit), answered in FCM's group form. What
    /// fails before the members are known answers as a send to one token does, with the reason: a message error
    /// (`InvalidTtl`, `MessageTooBig`, …), a key no group has (`NotRegistered`: the group was deleted with its last
    /// member, or never was), another project's group (`MismatchSenderId`).
    /// Its members are read on a store thread and the answer handed back to `eventLoop`.
    private func dispatchGroupOnLoop(
        _ send: FCMSendRequest,
        key: NotificationKey,
        project: Project,
        on eventLoop: any EventLoop,
        completion: @escaping @Sendable (Result<Outcome, any Error>) -> Void
    ) {
        if let error = send.messageError { return completion(.success(refusedGroupSend(error))) }
        store.deviceGroup(notificationKey: key.rawValue) { [self] result in
            eventLoop.execute { [self] in
                let step: GroupStep
                do {
                    step = try groupStep(send, try result.get(), project: project)
                } catch {
                    return completion(.failure(error))
                }
                switch step {
                case .answer(let outcome):
                    completion(.success(outcome))
                case .commit(let tokenSend, let group):
                    guard !tokenSend.messages.isEmpty else {
                        return completion(.success(groupAnswer(tokenSend, group, outcomes: [])))
                    }
                    path.commit(tokenSend.messages, on: eventLoop) { [self] result in
                        completion(result.map { groupAnswer(tokenSend, group, outcomes: $0) })
                    }
                }
            }
        }
    }

    /// ``dispatchOnLoop(_:project:on:completion:)`` for a topic or condition send: its row committed through
    /// ``PushStore/enqueueTopicMessage(_:completion:)``, the answer handed back to `eventLoop`.
    private func dispatchTopicOnLoop(
        _ send: FCMSendRequest,
        project: Project,
        on eventLoop: any EventLoop,
        completion: @escaping @Sendable (Result<Outcome, any Error>) -> Void
    ) {
        let message: NewTopicMessage
        do {
            switch try topicStep(send, project: project) {
            case .answer(let response):
                completion(.success(.topic(response)))
                return
            case .store(let stored):
                message = stored
            }
        } catch {
            completion(.failure(error))
            return
        }
        store.enqueueTopicMessage(message) { [self] result in
            eventLoop.execute { [self] in
                completion(result.map { id in
                    metrics.sendsAccepted()
                    return .topic(.messageID(id))
                })
            }
        }
    }

    /// The rest of ``dispatchOnLoop(_:project:on:completion:)`` once the tokens' devices are known.
    private func commit(
        _ tokenSend: TokenSend,
        _ devices: some Sequence<Device?>,
        _ send: FCMSendRequest,
        _ project: Project,
        on eventLoop: any EventLoop,
        _ completion: @escaping @Sendable (Result<Outcome, any Error>) -> Void
    ) {
        var tokenSend = tokenSend
        tokenSend.resolve(devices, send: send, project: project, quotas: quotas)
        let resolved = tokenSend
        guard !resolved.messages.isEmpty else {
            completion(.success(.tokens(answered(resolved.response()))))
            return
        }
        path.commit(resolved.messages, on: eventLoop) { [self] result in
            completion(result.map { .tokens(answered(resolved.response(outcomes: $0))) })
        }
    }

    /// Counts `count` messages of the send against `project_message_rate` (its distinct well-formed tokens, one for
    /// a topic or condition; a dry run counts nothing), or throws ``ProjectQuotaExceeded``.
    private func admitProject(_ send: FCMSendRequest, project: Project, count: Int) throws {
        guard !send.dryRun, count > 0 else { return }
        if let wait = quotas.admit(project: project.id, count: count) {
            metrics.sendRejected(FCMError.Code.quotaExceeded)
            throw ProjectQuotaExceeded(retryAfterSeconds: wait)
        }
    }

    /// A device-group send once its group is read: an answer already, or its members' copies to commit.
    private enum GroupStep {
        case answer(Outcome)
        case commit(TokenSend, DeviceGroup)
    }

    /// The group's members resolved as a send to their tokens, counted against `project_message_rate`; the
    /// refusal of a key no group has or another project's group. Throws ``ProjectQuotaExceeded``.
    private func groupStep(_ send: FCMSendRequest, _ group: DeviceGroup?, project: Project) throws -> GroupStep {
        guard let group else { return .answer(refusedGroupSend(FCMError(code: .notRegistered))) }
        guard group.project == project.id else { return .answer(refusedGroupSend(FCMError(code: .mismatchSenderId))) }
        var tokenSend = TokenSend(recipients: group.members.map { FCMRecipient(token: $0.token) })
        try admitProject(send, project: project, count: tokenSend.lookups.count)
        tokenSend.resolve(group.members, send: send, project: project, quotas: quotas)
        return .commit(tokenSend, group)
    }

    /// A device-group send refused before its members are known: answered as a send to one token.
    private func refusedGroupSend(_ error: FCMError) -> Outcome {
        .tokens(answered(FCMSendResponse(multicastID: .generate(), results: [.error(error)])))
    }

    /// FCM's group answer: one result per member, in member order.
    private func groupAnswer(_ tokenSend: TokenSend, _ group: DeviceGroup, outcomes: [EnqueueResult]) -> Outcome {
        let response = answered(tokenSend.response(outcomes: outcomes))
        return .deviceGroup(
            FCMDeviceGroupResponse(
                members: zip(group.members, response.results).map { .init(token: $0.token, result: $1) }))
    }

    /// The response of a token send, counted.
    private func answered(_ response: FCMSendResponse) -> FCMSendResponse {
        metrics.sendAnswered(response.results)
        return response
    }

    /// What a topic or condition send comes to before the store: an answer already (a message error, a dry run,
    /// the topic's rate exceeded) or the row to commit.
    private enum TopicStep {
        case answer(FCMTopicResponse)
        case store(NewTopicMessage)
    }

    /// Validates a topic or condition send, counts it against `project_message_rate` and the topic's rate, and
    /// builds its row. Throws ``FCMError/invalidParameters(_:)`` for a condition that a device subscribed to none of
    /// its topics would satisfy — the fan-out looks only at the subscribers of the topics a condition names, so
    /// `!('a' in topics)` would silently miss devices — and ``ProjectQuotaExceeded``.
    private func topicStep(_ send: FCMSendRequest, project: Project) throws -> TopicStep {
        let target: NewTopicMessage.Target
        switch send.addressing {
        case .topic(let topic):
            target = .topic(topic.name)
        case .condition(let condition):
            guard !condition.matchesUnsubscribed else {
                let error = FCMError.invalidParameters("the condition must require at least one topic")
                metrics.sendRejected(error.code)
                throw error
            }
            target = .condition(condition.text)
        case .tokens, .deviceGroup:
            preconditionFailure("a topic step for a send that is not to a topic or condition")
        }
        try admitProject(send, project: project, count: 1)
        if let error = send.messageError {
            metrics.sendRejected(error.code)
            return .answer(.error(error))
        }
        if send.dryRun {
            return .answer(.dryRun)
        }
        guard quotas.admit(topic: target, project: project.id) else {
            metrics.sendRejected(FCMError.topicsMessageRateExceeded.code)
            return .answer(.error(.topicsMessageRateExceeded))
        }
        // A topic message is expanded in the background; "now or never" cannot be kept for it. Accept it as FCM
        // does and deliver to nobody who is not connected by the time it expands: the smallest TTL.
        let ttl: Duration = send.timeToLive > 0 ? .seconds(send.timeToLive) : .seconds(1)
        let envelope = Envelope(request: send, senderID: SenderID(UInt64(project.senderID)))
        // `restricted_package_name` goes with the message: the expansion skips the subscribers of other apps (the
        // answer is the message id all the same, as FCM's).
        return .store(
            NewTopicMessage(
                project: project.id, target: target, body: envelope.body, collapseKey: send.collapseKey, timeToLive: ttl,
                restrictedPackageName: send.restrictedPackageName))
    }
}
