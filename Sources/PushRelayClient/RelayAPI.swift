import Foundation
import HTTPTypes
import PushRelayWire

/// The relay's device-side HTTP API, in one place: paths, credentials, bodies and status codes.
///
/// - `POST /v1/register`, `Authorization: key=<client key>`, body `{"project","app","platform"}`
///   → `{"token","secret","sender_id"}`.
/// - `GET /v1/stream`, `Authorization: Bearer <secret>`, `Accept: text/event-stream`, `Last-Event-ID` when resuming.
/// - `POST /v1/ack`, `Authorization: Bearer <secret>`, body `{"ids":[…]}`.
/// - `DELETE /v1/register`, `Authorization: Bearer <secret>`.
struct RelayAPI: Sendable {
    /// The header that carries the client key on registration. One constant, so that changing the scheme is
    /// one line: `Authorization: key=<client key>`, the form FCM senders already use for the server key.
    static let clientKeyField = HTTPField.Name.authorization
    /// The prefix of the client key's value in ``clientKeyField``.
    static let clientKeyPrefix = DeviceAPI.clientKeyPrefix

    /// The server URL's path without a trailing slash (`""` for `http://host:port`).
    let pathPrefix: String

    init(serverURL: URL) {
        var path = serverURL.path
        while path.hasSuffix("/") { path.removeLast() }
        pathPrefix = path
    }

    func registerRequest(_ registration: PushClientConfiguration.Registration) -> TransportRequest {
        var fields = HTTPFields()
        fields[Self.clientKeyField] = Self.clientKeyPrefix + registration.clientKey
        fields[.contentType] = "application/json"
        fields[.accept] = "application/json"
        let body: JSON = [
            "project": .string(registration.project),
            "app": .string(registration.app),
            "platform": .string(registration.platform),
        ]
        return TransportRequest(method: .post, path: pathPrefix + DeviceAPI.registerPath, headerFields: fields,
                                body: body.serialized())
    }

    func registration(from response: TransportResponse) throws -> PushCredentials {
        try Self.check(response, operation: "register")
        guard let object = try? JSON.parse(Data(response.body)),
              let secret = object["secret"]?.stringValue, !secret.isEmpty,
              let token = object["token"]?.stringValue, !token.isEmpty
        else {
            throw PushClientError(code: .invalidResponse,
                                  message: "register: the answer has no token and secret", status: response.status)
        }
        let senderID = object["sender_id"].flatMap { $0.stringValue ?? $0.intValue.map(String.init) }
        return PushCredentials(token: token, secret: secret, senderID: senderID)
    }

    func unregisterRequest(secret: String) -> TransportRequest {
        TransportRequest(method: .delete, path: pathPrefix + DeviceAPI.registerPath, headerFields: Self.bearer(secret),
                         body: nil)
    }

    func acknowledgeRequest(ids: [String], secret: String) -> TransportRequest {
        var fields = Self.bearer(secret)
        fields[.contentType] = "application/json"
        let body: JSON = ["ids": .array(ids.map(JSON.string))]
        return TransportRequest(method: .post, path: pathPrefix + DeviceAPI.acknowledgePath, headerFields: fields,
                                body: body.serialized())
    }

    func streamRequest(secret: String, lastEventID: String?) -> TransportRequest {
        var fields = Self.bearer(secret)
        fields[.accept] = DeviceAPI.eventStreamContentType
        fields[.cacheControl] = "no-cache"
        if let lastEventID {
            fields[HTTPField.Name(DeviceAPI.lastEventIDField)!] = lastEventID
        }
        return TransportRequest(method: .get, path: pathPrefix + DeviceAPI.streamPath, headerFields: fields, body: nil)
    }

    /// Throws the client error for a complete response whose status is not 2xx
    /// (``check(_:headerFields:body:operation:now:)``).
    static func check(_ response: TransportResponse, operation: String) throws {
        try check(response.status, headerFields: response.headerFields, body: response.body, operation: operation)
    }

    /// Throws the client error for a status that is not 2xx. `operation` names the call in the message. A `429` or
    /// `503` with a readable `Retry-After` carries it in ``PushClientError/retryAfter`` (counted from now).
    static func check(
        _ status: Int, headerFields: HTTPFields, body: [UInt8], operation: String, now: Date = Date()
    ) throws {
        guard !(200..<300).contains(status) else { return }
        var detail = Self.errorDetail(body)
        var retryAfter: Duration?
        if RetryAfter.applies(to: status), let value = headerFields[.retryAfter] {
            retryAfter = RetryAfter.delay(value, now: now)
            if let retryAfter { detail += " (Retry-After \(Self.secondsText(retryAfter)) s)" }
        }
        switch status {
        case 401, 403:
            throw PushClientError(code: .unauthorized, message: "\(operation): refused (\(status))\(detail)",
                                  status: status)
        case 404:
            throw PushClientError(
                code: .notFound, message: "\(operation): not found (404)\(detail): is the server URL a relay's?",
                status: status)
        case 410:
            throw PushClientError(code: .notRegistered, message: "\(operation): not registered (\(status))\(detail)",
                                  status: status)
        default:
            throw PushClientError(code: .httpStatus, message: "\(operation): status \(status)\(detail)",
                                  status: status, retryAfter: retryAfter)
        }
    }

    /// `2`, `0.5`: whole seconds without a fraction.
    private static func secondsText(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return attoseconds == 0 ? String(seconds) : String(duration.inSeconds)
    }

    /// `: <error>` from a JSON error body (`{"error": "..."}`), else empty. Bounded, one line.
    /// `: ERROR (message)` from the relay's JSON error body (the message says which of several refusals it was:
    /// an unknown secret, a used ticket, …).
    private static func errorDetail(_ body: [UInt8]) -> String {
        guard let object = try? JSON.parse(Data(body.prefix(4096))), let error = object["error"] else { return "" }
        var text = error.displayText.prefix(200).replacingOccurrences(of: "\n", with: " ")
        if let message = object["message"]?.displayText, !message.isEmpty {
            text += " (\(message.prefix(200).replacingOccurrences(of: "\n", with: " ")))"
        }
        return ": \(text)"
    }

    private static func bearer(_ secret: String) -> HTTPFields {
        var fields = HTTPFields()
        fields[.authorization] = DeviceAPI.bearerPrefix + secret
        return fields
    }
}
