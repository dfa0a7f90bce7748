import HTTPTypes
import Logging
import NIOCore
import PushRelayCore
import PushRelayHTTP
import PushRelayStore

/// `POST /fcm/send` and `/gcm/send`: the FCM legacy send API.
///
/// Order of work: authenticate the server key (401), read and parse the body (400 with FCM's plain-text reason),
/// look the well-formed tokens up (`NotRegistered`, `MismatchSenderId`, `InvalidPackageName`), build the envelope
/// once, commit every target's copy in one group commit, then answer. The answer with message ids goes out only
/// after the commit; a store that cannot commit gives `Unavailable` with `Retry-After` and nothing is stored.
struct SendRoute: Sendable {
    let store: any PushStore
    let hub: DeliveryHub
    let metrics: RelayMetrics
    let logger: Logger
    let maxBodyBytes: Int
    let retryAfterSeconds: Int
    /// While the node drains (graceful shutdown), new sends get `Unavailable` with `Retry-After`; sends already
    /// past this check finish their commit and get their ids.
    var readiness: Readiness? = nil

    func handle(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let encoding = Self.encoding(of: request.head)
        if readiness?.current == .draining {
            metrics.sendRejected(FCMError.Code.unavailable)
            return Self.answer(
                FCMHTTPAnswer(
                    error: FCMError(code: .unavailable), encoding: encoding, retryAfterSeconds: retryAfterSeconds)
            )
        }
        guard let header = request.head.headerFields.firstValue(for: .authorization),
            let key = AuthorizationHeader.serverKey(header)
        else {
            metrics.sendRejected(FCMError.Code.authentication)
            return Self.answer(FCMHTTPAnswer(error: .missingAuthentication, encoding: encoding))
        }
        let project: Project?
        do {
            project = try await store.authenticateServerKey(String(key))
        } catch {
            return unavailable(encoding, error)
        }
        guard let project else {
            metrics.sendRejected(FCMError.Code.authentication)
            return Self.answer(FCMHTTPAnswer(error: .invalidAuthentication, encoding: encoding))
        }

        let body = try await request.body.collect(upTo: maxBodyBytes)
        let send: FCMSendRequest
        do {
            send = try FCMSendRequest.parse(
                body: Array(body.readableBytesView),
                contentType: request.head.headerFields.firstValue(for: .contentType)
            )
        } catch {
            metrics.sendRejected(error.code)
            return Self.answer(FCMHTTPAnswer(error: error, encoding: encoding))
        }
        let senderID = SenderID(UInt64(project.senderID))

        do {
            switch send.addressing {
            case .tokens(let recipients):
                let response = try await sendToTokens(send, recipients: recipients, project: project, senderID: senderID)
                return Self.answer(FCMHTTPAnswer(response, encoding: send.encoding))
            case .topic(let topic):
                let response = try await sendToTopic(send, target: .topic(topic.name), project: project, senderID: senderID)
                return Self.answer(FCMHTTPAnswer(response, encoding: send.encoding))
            case .condition(let condition):
                // The fan-out looks only at the subscribers of the topics a condition names; a condition that a
                // device without any of them satisfies (`!('a' in topics)`) would silently miss devices: refuse it.
                guard !condition.matchesUnsubscribed else {
                    let error = FCMError.invalidParameters("the condition must require at least one topic")
                    metrics.sendRejected(error.code)
                    return Self.answer(FCMHTTPAnswer(error: error, encoding: send.encoding))
                }
                let response = try await sendToTopic(
                    send, target: .condition(condition.text), project: project, senderID: senderID)
                return Self.answer(FCMHTTPAnswer(response, encoding: send.encoding))
            }
        } catch let error as StoreError where error.code == .unavailable || error.code == .closed {
            return unavailable(send.encoding, error)
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
        guard send.timeToLive > 0 else {
            // A topic message is expanded in the background; "now or never" cannot be kept for it. Accept it as
            // FCM does and deliver to nobody who is not connected by the time it expands: the smallest TTL.
            return try await enqueueTopic(send, target: target, project: project, senderID: senderID, ttl: .seconds(1))
        }
        return try await enqueueTopic(
            send, target: target, project: project, senderID: senderID, ttl: .seconds(send.timeToLive))
    }

    private func enqueueTopic(
        _ send: FCMSendRequest,
        target: NewTopicMessage.Target,
        project: Project,
        senderID: SenderID,
        ttl: Duration
    ) async throws -> FCMTopicResponse {
        let envelope = Envelope(request: send, senderID: senderID)
        let id = try await store.enqueueTopicMessage(
            NewTopicMessage(
                project: project.id, target: target, body: envelope.body, collapseKey: send.collapseKey, timeToLive: ttl)
        )
        metrics.sendsAccepted()
        return .messageID(id)
    }

    private func unavailable(_ encoding: FCMSendRequest.Encoding, _ error: any Error) -> HTTPServerResponse {
        logger.warning("store unavailable; answering Unavailable", metadata: ["relay.error": "\(error)"])
        metrics.sendRejected(FCMError.Code.unavailable)
        return Self.answer(
            FCMHTTPAnswer(
                error: FCMError(code: .unavailable), encoding: encoding, retryAfterSeconds: retryAfterSeconds)
        )
    }

    static func encoding(of head: HTTPRequest) -> FCMSendRequest.Encoding {
        guard let contentType = head.headerFields.firstValue(for: .contentType) else { return .json }
        return contentType.lowercased().hasPrefix("application/json") ? .json : .form
    }

    static func answer(_ answer: FCMHTTPAnswer) -> HTTPServerResponse {
        var fields = HTTPFields()
        fields[.contentType] = answer.contentType
        if let retryAfter = answer.retryAfterSeconds { fields[.retryAfter] = String(retryAfter) }
        return HTTPServerResponse(
            status: HTTPResponse.Status(code: answer.status),
            headerFields: fields,
            body: .bytes(ByteBuffer(bytes: answer.body))
        )
    }
}
