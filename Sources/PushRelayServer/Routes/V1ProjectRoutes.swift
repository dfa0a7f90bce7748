import Foundation
import HTTPTypes
import Logging
import NIOCore
import PushRelayCore
import PushRelayWire
import PushRelayHTTP
import PushRelayStore

/// Everything under `/v1/projects/`: the FCM HTTP v1 API, authorized by a service account's access token
/// (`Authorization: Bearer …`, from `POST /token`), answered in Google's `google.rpc.Status` form.
///
/// - `POST …/{project_id}/messages:send`: parse and validate the v1 `Message` (Core), map it onto the legacy request,
///   and hand it to the ``SendDispatcher`` the legacy route uses: same tokens, queues, envelope and message ids.
///   Answers `{"name": "projects/{project_id}/messages/{id}"}` with the id the device sees as `gcm.message_id`.
///   A device group's notification key in `message.token` sends to every member as the legacy API does; the name is
///   that of the first member's copy accepted, and when no member got one, the first member's error is the answer.
/// - `POST …/{project_id}/registrations/{token}/topicSubscriptions?topic_name=…` and
///   `DELETE …/topicSubscriptions/{topic}?allow_missing=true`: topic membership of one token.
/// - Anything else: `501 UNIMPLEMENTED`, never a 404, which v1 libraries read as `UNREGISTERED`.
///
/// `{project_id}` is the project's name or its sender id (Google accepts the id or the number); a token of another
/// project is `403 PERMISSION_DENIED`.
struct V1ProjectRoutes: Sendable {
    let store: any PushStore
    let dispatcher: SendDispatcher
    let metrics: RelayMetrics
    let logger: Logger
    let retryAfterSeconds: Int
    /// `max_send_body_size`: the route's limit, which the transport enforces before the handler runs.
    let maxBodyBytes: Int
    var readiness: Readiness? = nil

    /// The gate of `/v1/projects/{path*}` (issue 12): a `messages:send` is authenticated from its headers before
    /// its body is read; a missing or malformed `Authorization: Bearer` is answered `401 UNAUTHENTICATED` at once, a
    /// token the store does not know as soon as the look-up says so. Other paths go to the handler (501 for what is
    /// not served).
    func gate(_ head: HTTPRequest) -> HTTPGateDecision {
        guard head.method == .post, let path = head.path, Self.isSend(path) else { return .allow }
        guard let header = head.headerFields.onlyValue(for: .authorization),
            let token = AuthorizationHeader.bearer(header)
        else { return .deny(unauthenticated()) }
        if let project = store.cachedProject(accessToken: String(token)) {
            return .admit(AdmittedProject(project: project))
        }
        let store = self.store, candidate = String(token), routes = self
        return .verify {
            // As the legacy route's gate: a store error is the handler's to answer (UNAVAILABLE), not a 401.
            do {
                if try await store.authenticateAccessToken(candidate) != nil { return nil }
            } catch {
                return nil
            }
            return routes.unauthenticated()
        }
    }

    /// The event-loop path of `/v1/projects/{path*}` (a `.promised` route): a `messages:send` whose access token's
    /// project is in memory (from the gate, or the cache) is parsed, mapped onto the legacy request, committed and
    /// answered without a task (``SendDispatcher/dispatchOnLoop(_:project:on:completion:)``: the tokens from memory
    /// or a store thread, the answer on this connection's loop after the commit), as the legacy route's sends are.
    /// Anything else — another path, a token that must be read — continues in a task through ``handle(_:on:)``,
    /// which answers alike.
    func handle(_ request: HTTPServerRequest, _ body: ByteBuffer, _ promise: HTTPResponsePromise) {
        guard request.head.method == .post, let projectID = Self.sendProjectID(request),
            let project = (request.admission as? AdmittedProject)?.project ?? cachedProject(request)
        else {
            promise.completeWithTask { try await self.handle(request, on: promise.eventLoop) }
            return
        }
        guard Self.project(project, isNamed: projectID) else {
            promise.succeed(permissionDenied(projectID))
            return
        }
        if readiness?.current == .draining {
            promise.succeed(unavailable(nil))
            return
        }
        let send: FCMSendRequest
        do {
            send = try parse(body)
        } catch {
            promise.succeed(error.answer)
            return
        }
        dispatcher.dispatchOnLoop(send, project: project, on: promise.eventLoop) { [self] result in
            do { promise.succeed(try answer(result, projectID)) } catch { promise.fail(error) }
        }
    }

    /// Whether the path (its query aside) ends in `:send`, compared over the bytes (a `Character` split and
    /// comparison cost every send thousands of instructions).
    private static func isSend(_ path: String) -> Bool {
        let utf8 = path.utf8
        let end = utf8.firstIndex(of: UInt8(ascii: "?")) ?? utf8.endIndex
        return utf8[..<end].reversed().starts(with: ":send".utf8.reversed())
    }

    /// The one handler of `/v1/projects/{path*}`, all methods, in a task; a send, once its token is read, runs on
    /// `eventLoop` as the event-loop path's does.
    func handle(_ request: HTTPServerRequest, on eventLoop: any EventLoop) async throws -> HTTPServerResponse {
        let segments = Self.segments(request)
        let method = request.head.method
        guard segments.count >= 2, !segments[0].isEmpty else { return unimplemented(request) }
        let projectID = segments[0]
        switch (method, Array(segments.dropFirst())) {
        case (.post, ["messages:send"]):
            return try await authorized(request, projectID) { project in try await send(request, projectID, project, on: eventLoop) }
        case (.post, let path) where path.count == 3 && path[0] == "registrations" && path[2] == "topicSubscriptions":
            return try await authorized(request, projectID) { project in
                try await membership(request, projectID, project, token: path[1], topic: request.queryParameter("topic_name"), subscribe: true)
            }
        case (.delete, let path) where path.count == 4 && path[0] == "registrations" && path[2] == "topicSubscriptions":
            return try await authorized(request, projectID) { project in
                try await membership(request, projectID, project, token: path[1], topic: path[3], subscribe: false)
            }
        default:
            return unimplemented(request)
        }
    }

    /// The path below `/v1/projects/`, split at `/`, each segment percent-decoded (as it is when its escapes are
    /// not valid UTF-8).
    private static func segments(_ request: HTTPServerRequest) -> [String] {
        let rest = request.pathParameters["path"] ?? ""
        return PathSegments.split(rest[...], omittingEmpty: false).map {
            PercentDecoding.decode($0, plus: .plus) ?? String($0)
        }
    }

    /// The `{project_id}` of a `…/{project_id}/messages:send` path, else nil.
    private static func sendProjectID(_ request: HTTPServerRequest) -> String? {
        let segments = segments(request)
        guard segments.count == 2, !segments[0].isEmpty, segments[1] == "messages:send" else { return nil }
        return segments[0]
    }

    /// The project of the request's bearer token when memory holds it, else nil.
    private func cachedProject(_ request: HTTPServerRequest) -> Project? {
        guard let header = request.head.headerFields.onlyValue(for: .authorization),
            let token = AuthorizationHeader.bearer(header)
        else { return nil }
        return store.cachedProject(accessToken: String(token))
    }

    /// Whether `{project_id}` names `project`: its name or its sender id (Google accepts the id or the number).
    private static func project(_ project: Project, isNamed projectID: String) -> Bool {
        projectID == project.name || projectID == String(project.senderID)
    }

    private func permissionDenied(_ projectID: String) -> HTTPServerResponse {
        metrics.sendsRejected(error: "PERMISSION_DENIED")
        return Self.answer(.permissionDenied(project: projectID))
    }

    private func unimplemented(_ request: HTTPServerRequest) -> HTTPServerResponse {
        Self.answer(.unimplemented(method: request.head.method.rawValue, path: String(request.pathWithoutQuery)))
    }

    /// Authenticates the bearer token (401) and checks that its project is the one in the path (403).
    private func authorized(
        _ request: HTTPServerRequest,
        _ projectID: String,
        _ body: (Project) async throws -> HTTPServerResponse
    ) async throws -> HTTPServerResponse {
        guard let header = request.head.headerFields.onlyValue(for: .authorization),
            let token = AuthorizationHeader.bearer(header)
        else { return unauthenticated() }
        let project: Project?
        do {
            project = try await store.authenticateAccessToken(String(token))
        } catch {
            return unavailable(error)
        }
        guard let project else { return unauthenticated() }
        guard Self.project(project, isNamed: projectID) else { return permissionDenied(projectID) }
        return try await body(project)
    }

    private func send(
        _ request: HTTPServerRequest, _ projectID: String, _ project: Project, on eventLoop: any EventLoop
    ) async throws -> HTTPServerResponse {
        if readiness?.current == .draining { return unavailable(nil) }
        let body = try await request.body.collect(upTo: maxBodyBytes)
        let send: FCMSendRequest
        do {
            send = try parse(body)
        } catch {
            return error.answer
        }
        let outcome: Result<SendDispatcher.Outcome, any Error>
        do {
            outcome = .success(try await dispatcher.dispatch(send, project: project, on: eventLoop))
        } catch {
            outcome = .failure(error)
        }
        return try answer(outcome, projectID)
    }

    /// A body that is not a valid v1 message: its answer.
    private struct Refused: Error {
        let answer: HTTPServerResponse
    }

    /// The v1 message in the body, mapped onto the legacy request, or its refusal (counted).
    private func parse(_ body: ByteBuffer) throws(Refused) -> FCMSendRequest {
        do {
            let message = try FCMv1Message.parse(json: Array(body.readableBytesView))
            return try message.legacyRequest(nowSeconds: Int64(Date().timeIntervalSince1970))
        } catch {
            metrics.sendsRejected(error: error.metricName)
            throw Refused(answer: Self.answer(error))
        }
    }

    /// The v1 answer of a dispatched send: `{"name": "projects/{project_id}/messages/{id}"}`, or the
    /// `google.rpc.Status` of its error; rethrows what is neither the client's nor the store's (a 500).
    private func answer(_ outcome: Result<SendDispatcher.Outcome, any Error>, _ projectID: String) throws
        -> HTTPServerResponse
    {
        let result: FCMSendResponse.Result
        do {
            switch try outcome.get() {
            case .tokens(let response): result = response.results.first ?? .error(.internalServerError)
            case .topic(.messageID(let id)): result = .messageID(id, canonicalRegistrationID: nil)
            case .topic(.dryRun): result = .dryRun
            case .topic(.error(let error)): result = .error(error)
            case .deviceGroup(let response):
                // One name for the group: the first member's copy that was accepted, else the first member's error.
                result = (response.members.first(where: \.succeeded) ?? response.members.first)?.result
                    ?? .error(.internalServerError)
            }
        } catch let quota as ProjectQuotaExceeded {
            return Self.answer(.from(.quotaExceeded, retryAfterSeconds: quota.retryAfterSeconds))
        } catch let error as FCMError {
            return Self.answer(.invalidArgument(error.reason ?? error.description, field: "message.condition"))
        } catch let error as StoreError where error.code == .unavailable || error.code == .closed {
            return unavailable(error)
        }
        let id: String
        switch result {
        case .messageID(let messageID, _): id = messageID.description
        case .dryRun: id = "fake_message_id"
        case .error(let error):
            // A device or topic past its rate says when it has room again; anything else waits the node's default.
            let wait = dispatcher.quotas.retryAfterSeconds(for: error.code) ?? retryAfterSeconds
            return Self.answer(.from(error, retryAfterSeconds: wait))
        }
        return Self.named(projectID, id)
    }

    /// `{"name":"projects/{project_id}/messages/{id}"}`, written straight into its bytes (through a `JSONValue` and
    /// new header fields it cost every send a few thousand instructions).
    private static func named(_ projectID: String, _ id: String) -> HTTPServerResponse {
        var body: [UInt8] = []
        body.reserveCapacity(40 + projectID.utf8.count + id.utf8.count)
        JSONWriter.appendRaw(#"{"name":"#, to: &body)
        JSONWriter.appendString("projects/\(projectID)/messages/\(id)", to: &body)
        JSONWriter.appendRaw("}", to: &body)
        return HTTPServerResponse(status: .ok, headerFields: Self.jsonFields, body: .bytes(ByteBuffer(bytes: body)))
    }

    /// The fields of every JSON answer, made once (a field's value is checked when made).
    private static let jsonFields: HTTPFields = [.contentType: "application/json; charset=UTF-8"]

    private func membership(
        _ request: HTTPServerRequest, _ projectID: String, _ project: Project, token: String, topic: String?,
        subscribe: Bool
    ) async throws -> HTTPServerResponse {
        let name = topic.map { $0.hasPrefix(TopicName.prefix) ? String($0.dropFirst(TopicName.prefix.count)) : $0 }
        guard let name, let topicName = TopicName(TopicName.prefix + name) else {
            return Self.answer(.invalidArgument("Invalid topic name: a topic matches [a-zA-Z0-9-_.~%]{1,900}", field: "topic_name"))
        }
        guard RegistrationToken.isWellFormed(token) else {
            return Self.answer(.invalidArgument("The registration token is not a valid FCM registration token", field: "registration"))
        }
        let results =
            subscribe
            ? try await store.subscribe(tokens: [token], to: topicName.name, project: project.id)
            : try await store.unsubscribe(tokens: [token], from: topicName.name, project: project.id)
        switch results.first ?? .notFound {
        case .ok:
            // Unsubscribing a token that was not subscribed succeeds, with or without `allow_missing=true`.
            return JSONResponse.ok([:])
        case .notFound: return Self.answer(.unregistered)
        case .wrongProject: return Self.answer(.senderIDMismatch)
        case .tooManyTopics:
            return Self.answer(.invalidArgument("The registration token is subscribed to too many topics (2000)"))
        }
    }

    func unauthenticated() -> HTTPServerResponse {
        metrics.sendsRejected(error: "UNAUTHENTICATED")
        var response = Self.answer(.unauthenticated)
        response.head.headerFields[.wwwAuthenticate] = "Bearer realm=\"https://accounts.google.com/\""
        return response
    }

    private func unavailable(_ error: (any Error)?) -> HTTPServerResponse {
        if let error { logger.warning("store unavailable; answering UNAVAILABLE", metadata: ["relay.error": "\(error)"]) }
        metrics.sendRejected(FCMError.Code.unavailable)
        return Self.answer(.unavailable(retryAfterSeconds: retryAfterSeconds))
    }

    /// The `google.rpc.Status` answer of an error.
    static func answer(_ error: FCMv1Error) -> HTTPServerResponse {
        var fields = HTTPFields()
        fields[.contentType] = "application/json; charset=UTF-8"
        if let retryAfter = error.retryAfterSeconds { fields[.retryAfter] = String(retryAfter) }
        return HTTPServerResponse(
            status: HTTPResponse.Status(code: error.httpStatus), headerFields: fields,
            body: .bytes(ByteBuffer(bytes: error.body)))
    }
}
