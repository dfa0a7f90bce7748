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

    private var dispatcher: SendDispatcher { SendDispatcher(store: store, hub: hub, metrics: metrics) }

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
        do {
            switch try await dispatcher.dispatch(send, project: project) {
            case .tokens(let response): return Self.answer(FCMHTTPAnswer(response, encoding: send.encoding))
            case .topic(let response): return Self.answer(FCMHTTPAnswer(response, encoding: send.encoding))
            }
        } catch let error as FCMError {
            return Self.answer(FCMHTTPAnswer(error: error, encoding: send.encoding))
        } catch let error as StoreError where error.code == .unavailable || error.code == .closed {
            return unavailable(send.encoding, error)
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
