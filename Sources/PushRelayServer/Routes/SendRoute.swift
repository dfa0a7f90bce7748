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
    let path: MessagePath
    let metrics: RelayMetrics
    let logger: Logger
    let maxBodyBytes: Int
    let retryAfterSeconds: Int
    /// While the node drains (graceful shutdown), new sends get `Unavailable` with `Retry-After`; sends already
    /// past this check finish their commit and get their ids.
    var readiness: Readiness? = nil

    /// The event-loop path (a `.promised` route): when the server key and every token are in memory, the send
    /// is parsed, validated, committed through ``MessagePath`` and answered without a task; the answer is
    /// completed on this connection's loop after the commit. Anything else (a look-up that must read the store,
    /// a topic or condition send) continues in a task through ``handle(_:)``.
    func handle(_ request: HTTPServerRequest, _ body: ByteBuffer, _ promise: EventLoopPromise<HTTPServerResponse>) {
        let head = request.head
        let key: Substring
        switch authorize(head) {
        case .answer(let response):
            promise.succeed(response)
            return
        case .key(let found):
            key = found
        }
        guard let project = store.cachedProject(serverKey: String(key)) else {
            promise.completeWithTask { try await self.handle(request) }
            return
        }
        let send: FCMSendRequest
        switch parse(body, head) {
        case .answer(let response):
            promise.succeed(response)
            return
        case .send(let parsed):
            send = parsed
        }
        guard case .tokens(let recipients) = send.addressing else {
            promise.completeWithTask { try await self.dispatch(send, project: project) }
            return
        }
        var tokenSend = TokenSend(recipients: recipients)
        guard let devices = store.cachedDevices(tokens: tokenSend.tokens) else {
            let unresolved = tokenSend
            promise.completeWithTask { try await self.sendToTokens(send, unresolved, project: project) }
            return
        }
        tokenSend.resolve(devices, send: send, project: project)
        let resolved = tokenSend
        guard !tokenSend.messages.isEmpty else {
            promise.succeed(answered(tokenSend.response(), encoding: send.encoding))
            return
        }
        let encoding = send.encoding
        path.commit(resolved.messages, on: promise.futureResult.eventLoop) { result in
            switch result {
            case .success(let outcomes):
                promise.succeed(answered(resolved.response(outcomes: outcomes), encoding: encoding))
            case .failure(let error):
                guard let error = error as? StoreError, error.code == .unavailable || error.code == .closed else {
                    promise.fail(error)
                    return
                }
                promise.succeed(unavailable(encoding, error))
            }
        }
    }

    /// The task path: the same send, for look-ups that read the store.
    func handle(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let key: Substring
        switch authorize(request.head) {
        case .answer(let response): return response
        case .key(let found): key = found
        }
        let project: Project?
        do {
            project = try await store.authenticateServerKey(String(key))
        } catch {
            return unavailable(Self.encoding(of: request.head), error)
        }
        guard let project else {
            metrics.sendRejected(FCMError.Code.authentication)
            return Self.answer(FCMHTTPAnswer(error: .invalidAuthentication, encoding: Self.encoding(of: request.head)))
        }
        let body = try await request.body.collect(upTo: maxBodyBytes)
        switch parse(body, request.head) {
        case .answer(let response): return response
        case .send(let send): return try await dispatch(send, project: project)
        }
    }

    private enum Authorization {
        case key(Substring)
        case answer(HTTPServerResponse)
    }

    /// Draining and the `Authorization` header's form; the key itself is checked by the caller.
    private func authorize(_ head: HTTPRequest) -> Authorization {
        if readiness?.current == .draining {
            metrics.sendRejected(FCMError.Code.unavailable)
            return .answer(
                Self.answer(
                    FCMHTTPAnswer(
                        error: FCMError(code: .unavailable), encoding: Self.encoding(of: head),
                        retryAfterSeconds: retryAfterSeconds)))
        }
        guard let header = head.headerFields.firstValue(for: .authorization),
            let key = AuthorizationHeader.serverKey(header)
        else {
            metrics.sendRejected(FCMError.Code.authentication)
            return .answer(Self.answer(FCMHTTPAnswer(error: .missingAuthentication, encoding: Self.encoding(of: head))))
        }
        return .key(key)
    }

    private enum Parsed {
        case send(FCMSendRequest)
        case answer(HTTPServerResponse)
    }

    private func parse(_ body: ByteBuffer, _ head: HTTPRequest) -> Parsed {
        do {
            return .send(
                try FCMSendRequest.parse(
                    body: Array(body.readableBytesView),
                    contentType: head.headerFields.firstValue(for: .contentType)
                ))
        } catch {
            metrics.sendRejected(error.code)
            return .answer(Self.answer(FCMHTTPAnswer(error: error, encoding: Self.encoding(of: head))))
        }
    }

    private func dispatch(_ send: FCMSendRequest, project: Project) async throws -> HTTPServerResponse {
        let senderID = SenderID(UInt64(project.senderID))
        do {
            switch send.addressing {
            case .tokens(let recipients):
                return try await sendToTokens(send, TokenSend(recipients: recipients), project: project)
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
        _ tokenSend: TokenSend,
        project: Project
    ) async throws -> HTTPServerResponse {
        var tokenSend = tokenSend
        do {
            let devices = tokenSend.lookups.isEmpty ? [] : try await store.resolveTokens(tokenSend.tokens)
            tokenSend.resolve(devices, send: send, project: project)
            let outcomes = tokenSend.messages.isEmpty ? [] : try await path.commit(tokenSend.messages)
            return answered(tokenSend.response(outcomes: outcomes), encoding: send.encoding)
        } catch let error as StoreError where error.code == .unavailable || error.code == .closed {
            return unavailable(send.encoding, error)
        }
    }

    /// The 200 answer of a token send, counted.
    private func answered(_ response: FCMSendResponse, encoding: FCMSendRequest.Encoding) -> HTTPServerResponse {
        metrics.sendAnswered(response.results)
        return Self.answer(FCMHTTPAnswer(response, encoding: encoding))
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
