import HTTPTypes
import Logging
import NIOCore
import PushRelayCore
import PushRelayHTTP
import PushRelayStore

/// `POST /fcm/send` and `/gcm/send`: the FCM legacy send API.
///
/// Order of work: authenticate the server key (401), read and parse the body (400 with FCM's plain-text reason),
/// then ``SendDispatcher`` (shared with the v1 route) looks the well-formed tokens up (`NotRegistered`,
/// `MismatchSenderId`, `InvalidPackageName`), builds the envelope once and commits every target's copy in one group
/// commit; then answer. The answer with message ids goes out only
/// after the commit; a store that cannot commit gives `Unavailable` with `Retry-After` and nothing is stored.
///
/// A class, not a struct: the route is captured by the closures of every send (the gate, the handler, the commit's
/// completion), and a capture of a class is one reference count, where a copy of this struct counted each of its
/// references (sixteen copies a send).
final class SendRoute: Sendable {
    let store: any PushStore
    let dispatcher: SendDispatcher
    let metrics: RelayMetrics
    let logger: Logger
    let maxBodyBytes: Int
    let retryAfterSeconds: Int
    /// While the node drains (graceful shutdown), new sends get `Unavailable` with `Retry-After`; sends already
    /// past this check finish their commit and get their ids.
    let readiness: Readiness?

    init(
        store: any PushStore, dispatcher: SendDispatcher, metrics: RelayMetrics, logger: Logger, maxBodyBytes: Int,
        retryAfterSeconds: Int, readiness: Readiness? = nil
    ) {
        self.store = store
        self.dispatcher = dispatcher
        self.metrics = metrics
        self.logger = logger
        self.maxBodyBytes = maxBodyBytes
        self.retryAfterSeconds = retryAfterSeconds
        self.readiness = readiness
    }

    /// The event-loop path (a `.promised` route): when the server key is in memory, a send to tokens is parsed,
    /// validated, committed and answered without a task (``SendDispatcher/dispatchOnLoop(_:project:on:completion:)``:
    /// its tokens from memory or a store thread); the answer is completed on this connection's loop after the
    /// commit; topic, condition and device-group sends likewise. A server key that must be read continues in a task
    /// through ``handle(_:on:)``.
    func handle(_ request: HTTPServerRequest, _ body: ByteBuffer, _ promise: HTTPResponsePromise) {
        let head = request.head
        let key: Substring
        switch authorize(head) {
        case .answer(let response):
            promise.succeed(response)
            return
        case .key(let found):
            key = found
        }
        // The gate found the key in memory a moment ago (the body was read since): one SHA-256 per send, not two.
        guard let project = (request.admission as? AdmittedProject)?.project ?? store.cachedProject(serverKey: String(key))
        else {
            promise.completeWithTask { try await self.handle(request, on: promise.eventLoop) }
            return
        }
        let send: FCMSendRequest
        do {
            send = try parse(body, head)
        } catch {
            promise.succeed(error.answer)
            return
        }
        // The answer needs the send's encoding only: the closure captures that, not a copy of the whole request.
        let encoding = send.encoding
        dispatcher.dispatchOnLoop(send, project: project, on: promise.eventLoop) { [self] result in
            do {
                promise.succeed(answer(try result.get(), encoding))
            } catch {
                do { promise.succeed(try failure(error, encoding)) } catch { promise.fail(error) }
            }
        }
    }

    /// The route's gate (issue 12): the server key is checked from the headers before the body is read, so that a
    /// client without a valid key cannot make the node buffer bodies of up to `max_send_body_size`. A missing or
    /// malformed header, or a draining node, is answered at once; a key in the authentication cache is let through,
    /// its project handed to the handler (``HTTPGateDecision/admit(_:)``);
    /// any other key is looked up while the body arrives, and a key the store does not know is answered `401`
    /// without waiting for the rest of the body. A store that cannot answer lets the handler decide (`Unavailable`).
    func gate(_ head: HTTPRequest) -> HTTPGateDecision {
        let key: Substring
        switch authorize(head) {
        case .answer(let response): return .deny(response)
        case .key(let found): key = found
        }
        if let project = store.cachedProject(serverKey: String(key)) { return .admit(AdmittedProject(project: project)) }
        let encoding = Self.encoding(of: head)
        let store = self.store, metrics = self.metrics, candidate = String(key)
        return .verify {
            // Only a look-up that answered "no such key" refuses here (`try?` would flatten a store error into
            // the same nil): a store that cannot answer leaves it to the handler, which says Unavailable.
            do {
                if try await store.authenticateServerKey(candidate) != nil { return nil }
            } catch {
                return nil
            }
            metrics.sendRejected(FCMError.Code.authentication)
            return Self.answer(FCMHTTPAnswer(error: .invalidAuthentication, encoding: encoding))
        }
    }

    /// The task path: the same send once its server key is read from the store; the send itself then runs on
    /// `eventLoop` as the event-loop path's does.
    func handle(_ request: HTTPServerRequest, on eventLoop: any EventLoop) async throws -> HTTPServerResponse {
        let key: Substring
        switch authorize(request.head) {
        case .answer(let response): return response
        case .key(let found): key = found
        }
        let encoding = Self.encoding(of: request.head)
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
            send = try parse(body, request.head)
        } catch {
            return error.answer
        }
        do {
            return answer(try await dispatcher.dispatch(send, project: project, on: eventLoop), send.encoding)
        } catch {
            return try failure(error, send.encoding)
        }
    }

    private func answer(_ outcome: SendDispatcher.Outcome, _ encoding: FCMSendRequest.Encoding) -> HTTPServerResponse {
        switch outcome {
        case .tokens(let response): Self.answer(FCMHTTPAnswer(response, encoding: encoding))
        case .topic(let response): Self.answer(FCMHTTPAnswer(response, encoding: encoding))
        case .deviceGroup(let response): Self.answer(FCMHTTPAnswer(response))
        }
    }

    /// The answer for a dispatch error; rethrows what is not the client's or the store's (a 500).
    private func failure(_ error: any Error, _ encoding: FCMSendRequest.Encoding) throws -> HTTPServerResponse {
        if let error = error as? FCMError {
            return Self.answer(FCMHTTPAnswer(error: error, encoding: encoding))
        }
        if let quota = error as? ProjectQuotaExceeded {
            return Self.answer(
                FCMHTTPAnswer(error: .quotaExceeded, encoding: encoding, retryAfterSeconds: quota.retryAfterSeconds))
        }
        if let error = error as? StoreError, error.code == .unavailable || error.code == .closed {
            return unavailable(encoding, error)
        }
        throw error
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
        guard let header = head.headerFields.onlyValue(for: .authorization),
            let key = AuthorizationHeader.serverKey(header)
        else {
            metrics.sendRejected(FCMError.Code.authentication)
            return .answer(Self.answer(FCMHTTPAnswer(error: .missingAuthentication, encoding: Self.encoding(of: head))))
        }
        return .key(key)
    }

    /// A body that is not a valid send: its answer.
    private struct Refused: Error {
        let answer: HTTPServerResponse
    }

    /// The send in the body, or its refusal. A typed throw rather than an enum of the two: the request is moved
    /// out, where a `switch` over the enum copied it (every field retained, then released with the enum).
    private func parse(_ body: ByteBuffer, _ head: HTTPRequest) throws(Refused) -> FCMSendRequest {
        let bytes = Array(body.readableBytesView)
        let contentType = head.headerFields.firstValue(for: .contentType)
        do {
            return try FCMSendRequest.parse(body: bytes, contentType: contentType)
        } catch {
            metrics.sendRejected(error.code)
            let encoding = FCMSendRequest.Encoding(contentType: contentType, body: bytes)
            throw Refused(answer: Self.answer(FCMHTTPAnswer(error: error, encoding: encoding)))
        }
    }

    private func unavailable(_ encoding: FCMSendRequest.Encoding, _ error: any Error) -> HTTPServerResponse {
        logger.warning("store unavailable; answering Unavailable", metadata: ["relay.error": "\(error)"])
        metrics.sendRejected(FCMError.Code.unavailable)
        return Self.answer(
            FCMHTTPAnswer(
                error: FCMError(code: .unavailable), encoding: encoding, retryAfterSeconds: retryAfterSeconds)
        )
    }

    /// The answer's format before the body is read (``FCMSendRequest/Encoding/init(contentType:body:)``).
    static func encoding(of head: HTTPRequest) -> FCMSendRequest.Encoding {
        FCMSendRequest.Encoding(contentType: head.headerFields.firstValue(for: .contentType), body: nil)
    }

    static func answer(_ answer: FCMHTTPAnswer) -> HTTPServerResponse {
        // The two content types every answer has are fields made once (a field's value is checked when made).
        var fields: HTTPFields =
            switch answer.contentType {
            case FCMHTTPAnswer.jsonContentType: jsonFields
            case FCMHTTPAnswer.plainTextContentType: plainTextFields
            default: HTTPFields([HTTPField(name: .contentType, value: answer.contentType)])
            }
        if let retryAfter = answer.retryAfterSeconds { fields[.retryAfter] = String(retryAfter) }
        return HTTPServerResponse(
            status: HTTPResponse.Status(code: answer.status, reasonPhrase: answer.reasonPhrase ?? ""),
            headerFields: fields,
            body: .bytes(ByteBuffer(bytes: answer.body))
        )
    }

    private static let jsonFields: HTTPFields = [.contentType: FCMHTTPAnswer.jsonContentType]
    private static let plainTextFields: HTTPFields = [.contentType: FCMHTTPAnswer.plainTextContentType]
}
