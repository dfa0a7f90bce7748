import Logging
import PushRelayCore
import PushRelayStore

/// The send machinery below the send routes, shared by the FCM legacy route (`/fcm/send`) and the HTTP v1 route
/// (`messages:send`): resolve the tokens (`NotRegistered`, `MismatchSenderId`, `InvalidPackageName`), build the
/// envelope once, commit every copy in one group commit (or the topic message row), hand time-to-live-0 copies to
/// live streams, and give each target its message id. Routes parse and answer in their own wire format; everything
/// between is here, once.
struct SendDispatcher: Sendable {
    let store: any PushStore
    let hub: DeliveryHub
    let metrics: RelayMetrics

    /// What a dispatched send gives its route.
    enum Outcome: Sendable {
        /// One result per token recipient, in request order.
        case tokens(FCMSendResponse)
        /// The topic or condition answer.
        case topic(FCMTopicResponse)
    }

    /// Sends a validated request for `project`. Throws ``FCMError/invalidParameters(_:)`` for a condition that a
    /// device subscribed to none of its topics would satisfy, and the store's errors (`unavailable`, `closed`).
    func dispatch(_ send: FCMSendRequest, project: Project) async throws -> Outcome {
        let senderID = SenderID(UInt64(project.senderID))
        switch send.addressing {
        case .tokens(let recipients):
            return .tokens(try await sendToTokens(send, recipients: recipients, project: project, senderID: senderID))
        case .topic(let topic):
            return .topic(try await sendToTopic(send, target: .topic(topic.name), project: project, senderID: senderID))
        case .condition(let condition):
            // The fan-out looks only at the subscribers of the topics a condition names; a condition that a
            // device without any of them satisfies (`!('a' in topics)`) would silently miss devices: refuse it.
            guard !condition.matchesUnsubscribed else {
                let error = FCMError.invalidParameters("the condition must require at least one topic")
                metrics.sendRejected(error.code)
                throw error
            }
            return .topic(
                try await sendToTopic(send, target: .condition(condition.text), project: project, senderID: senderID))
        }
    }

    private func sendToTokens(
        _ send: FCMSendRequest,
        recipients: [FCMRecipient],
        project: Project,
        senderID: SenderID
    ) async throws -> FCMSendResponse {
        var results = [FCMSendResponse.Result?](repeating: nil, count: recipients.count)
        var lookups: [(index: Int, token: String)] = []
        lookups.reserveCapacity(recipients.count)
        // A token repeated in `registration_ids` is sent once; its copies answer the first one's result.
        var firstIndex: [String: Int] = [:]
        var duplicates: [(index: Int, first: Int)] = []
        for (index, recipient) in recipients.enumerated() {
            if let error = recipient.error {
                results[index] = .error(error)
            } else if recipients.count > 1, let first = firstIndex.updateValue(index, forKey: recipient.token) {
                firstIndex[recipient.token] = first
                duplicates.append((index, first))
            } else {
                lookups.append((index, recipient.token))
            }
        }

        var targets: [(index: Int, device: Device)] = []
        if !lookups.isEmpty {
            let devices = try await store.resolveTokens(lookups.map(\.token))
            for (lookup, device) in zip(lookups, devices) {
                guard let device else {
                    results[lookup.index] = .error(FCMError(code: .notRegistered))
                    continue
                }
                guard device.project == project.id else {
                    results[lookup.index] = .error(FCMError(code: .mismatchSenderId))
                    continue
                }
                if let package = send.restrictedPackageName, package != device.app {
                    results[lookup.index] = .error(FCMError(code: .invalidPackageName))
                    continue
                }
                targets.append((lookup.index, device))
            }
        }

        if send.dryRun {
            // Validated, not delivered: FCM answers a placeholder id.
            for target in targets { results[target.index] = .dryRun }
        } else if !targets.isEmpty {
            let envelope = Envelope(request: send, senderID: senderID)
            let ttl = Duration.seconds(send.timeToLive)
            let messages = targets.map {
                NewMessage(device: $0.device.id, body: envelope.body, collapseKey: send.collapseKey, timeToLive: ttl)
            }
            let started = ContinuousClock.now
            let outcomes = try await store.enqueue(messages)
            metrics.recordCommit(duration: ContinuousClock.now - started)
            for (target, outcome) in zip(targets, outcomes) {
                switch outcome {
                case .stored(let id):
                    results[target.index] = .messageID(id)
                case .transient(let id):
                    hub.deliverTransient(TransientMessage(id: id, body: envelope.body), to: target.device.id)
                    results[target.index] = .messageID(id)
                case .deviceNotFound:
                    results[target.index] = .error(FCMError(code: .notRegistered))
                }
            }
        }

        for duplicate in duplicates { results[duplicate.index] = results[duplicate.first] }
        let final = results.map { $0 ?? .error(FCMError(code: .internalServerError)) }
        metrics.sendAnswered(final)
        return FCMSendResponse(multicastID: .generate(), results: final)
    }

    private func sendToTopic(
        _ send: FCMSendRequest,
        target: NewTopicMessage.Target,
        project: Project,
        senderID: SenderID
    ) async throws -> FCMTopicResponse {
        if let error = send.messageError {
            metrics.sendRejected(error.code)
            return .error(error)
        }
        if send.dryRun {
            metrics.sendsAccepted()
            return .dryRun
        }
        // A topic message is expanded in the background; "now or never" cannot be kept for it. Accept it as FCM
        // does and deliver to nobody who is not connected by the time it expands: the smallest TTL.
        let ttl: Duration = send.timeToLive > 0 ? .seconds(send.timeToLive) : .seconds(1)
        let envelope = Envelope(request: send, senderID: senderID)
        let id = try await store.enqueueTopicMessage(
            NewTopicMessage(
                project: project.id, target: target, body: envelope.body, collapseKey: send.collapseKey, timeToLive: ttl)
        )
        metrics.sendsAccepted()
        return .messageID(id)
    }
}
