import Foundation
import HTTPTypes
import Logging
import NIOCore
import PushRelayCore
import PushRelayHTTP
import PushRelayStore
import PushRelayWire

/// The Instance ID server API for topics, authenticated with the server key (or a v1 access token with
/// `access_token_auth: true`), and the device's own topic routes,
/// authenticated with the device secret (what the FCM client SDK's `subscribe(toTopic:)` does).
///
/// Answers follow the Instance ID API: `{}` for success, `{"error": "<CODE>"}` otherwise; the batch routes answer
/// `{"results": [...]}` with one entry per token, in order.
struct InstanceIDRoutes: Sendable {
    let store: any PushStore
    let logger: Logger
    /// `max_request_body_size`: the largest batch body.
    let maxBodyBytes: Int

    /// At most this many tokens per batch call, as FCM.
    static let maxBatchTokens = 1000

    /// The `message` of a single subscription's `400 TOO_MANY_TOPICS` (server-key and device routes alike).
    static let tooManyTopicsMessage = "the device holds the maximum number of topics"

    /// `POST /iid/v1/{token}/rel/topics/{topic}` (subscribe) and `DELETE` of the same path (unsubscribe).
    func relation(_ request: HTTPServerRequest, subscribe: Bool) async throws -> HTTPServerResponse {
        guard let project = try await authenticate(request) else { return Self.unauthorized }
        guard let token = request.pathParameters["token"], let topicText = request.pathParameters["topic"],
            let topic = TopicName(topicText)
        else { return JSONResponse.error(.badRequest, "INVALID_ARGUMENT", "invalid topic name") }
        let results =
            subscribe
            ? try await store.subscribe(tokens: [token], to: topic.name, project: project.id)
            : try await store.unsubscribe(tokens: [token], from: topic.name, project: project.id)
        switch results.first ?? .notFound {
        case .ok: return JSONResponse.ok([:])
        case .notFound: return JSONResponse.ok(["error": "NOT_FOUND"], status: .notFound)
        case .wrongProject: return JSONResponse.ok(["error": "PERMISSION_DENIED"], status: .forbidden)
        case .tooManyTopics:
            return JSONResponse.error(.badRequest, "TOO_MANY_TOPICS", Self.tooManyTopicsMessage)
        }
    }

    /// `POST /iid/v1:batchAdd` and `POST /iid/v1:batchRemove` with `{"to": "/topics/x", "registration_tokens": [...]}`.
    func batch(_ request: HTTPServerRequest, subscribe: Bool) async throws -> HTTPServerResponse {
        guard let project = try await authenticate(request) else { return Self.unauthorized }
        let object = try await JSONResponse.parseObject(request, upTo: maxBodyBytes)
        guard let to = object["to"]?.stringValue, let topic = TopicName(to) else {
            return JSONResponse.ok(["error": "INVALID_ARGUMENT: \"to\" must be a topic"], status: .badRequest)
        }
        guard let values = object["registration_tokens"]?.arrayValue, !values.isEmpty else {
            return JSONResponse.ok(["error": "INVALID_ARGUMENT: \"registration_tokens\" must be a non-empty array"], status: .badRequest)
        }
        guard values.count <= Self.maxBatchTokens else {
            return JSONResponse.ok(
                ["error": .string("INVALID_ARGUMENT: at most \(Self.maxBatchTokens) registration tokens")], status: .badRequest)
        }
        var tokens: [String] = []
        var malformed = Set<Int>()
        for (index, value) in values.enumerated() {
            if let token = value.stringValue, RegistrationToken.isWellFormed(token) {
                tokens.append(token)
            } else {
                malformed.insert(index)
            }
        }
        let outcomes =
            subscribe
            ? try await store.subscribe(tokens: tokens, to: topic.name, project: project.id)
            : try await store.unsubscribe(tokens: tokens, from: topic.name, project: project.id)
        var results: [JSONValue] = []
        results.reserveCapacity(values.count)
        var next = outcomes.makeIterator()
        for index in values.indices {
            if malformed.contains(index) {
                results.append(["error": "INVALID_ARGUMENT"])
                continue
            }
            switch next.next() ?? .notFound {
            case .ok: results.append([:])
            case .notFound: results.append(["error": "NOT_FOUND"])
            case .wrongProject: results.append(["error": "INVALID_ARGUMENT"])
            case .tooManyTopics: results.append(["error": "TOO_MANY_TOPICS"])
            }
        }
        return JSONResponse.ok(["results": .array(results)])
    }

    /// `GET /iid/info/{token}` (`?details=true` adds `rel.topics`).
    func info(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        guard let project = try await authenticate(request) else { return Self.unauthorized }
        guard let token = request.pathParameters["token"],
            let device = try await store.resolveTokens([token]).first ?? nil
        else { return JSONResponse.ok(["error": "NOT_FOUND"], status: .notFound) }
        guard device.project == project.id else {
            return JSONResponse.ok(["error": "PERMISSION_DENIED"], status: .forbidden)
        }
        var object = JSONObject()
        object["application"] = .string(device.app)
        object["authorizedEntity"] = .string(String(project.senderID))
        object["platform"] = .string(device.platform.uppercased())
        object["scope"] = "*"
        if request.queryParameter("details") == "true" {
            let subscriptions = try await store.subscriptions(of: device.id)
            var topics = JSONObject()
            for subscription in subscriptions {
                topics[subscription.topic] = ["addDate": .string(Self.day(subscription.addedAt))]
            }
            object["rel"] = ["topics": .object(topics)]
        }
        return JSONResponse.ok(.object(object))
    }

    /// `POST /v1/topics/{topic}` and `DELETE /v1/topics/{topic}` with the device's Bearer secret.
    func deviceRelation(_ request: HTTPServerRequest, subscribe: Bool) async throws -> HTTPServerResponse {
        guard let secret = DeviceRoutes.bearer(request), let device = try await store.authenticateDevice(secret: secret)
        else { return JSONResponse.unauthorized("unknown device secret") }
        guard let topicText = request.pathParameters["topic"], let topic = TopicName(topicText) else {
            return JSONResponse.error(.badRequest, "INVALID_ARGUMENT", "invalid topic name")
        }
        let results =
            subscribe
            ? try await store.subscribe(tokens: [device.token], to: topic.name, project: device.project)
            : try await store.unsubscribe(tokens: [device.token], from: topic.name, project: device.project)
        if case .tooManyTopics = results.first {
            return JSONResponse.error(.badRequest, "TOO_MANY_TOPICS", Self.tooManyTopicsMessage)
        }
        return JSONResponse.ok([:])
    }

    /// The project of the request's server key or access token (``ServerCredentials``).
    private func authenticate(_ request: HTTPServerRequest) async throws -> Project? {
        try await ServerCredentials.project(of: request, store: store)
    }

    private static let unauthorized = JSONResponse.ok(["error": "UNAUTHENTICATED"], status: .unauthorized)

    /// `yyyy-MM-dd` in UTC, as `addDate`.
    static func day(_ date: Date) -> String {
        let days = Int64((date.timeIntervalSince1970 / 86_400).rounded(.down))
        // Civil-from-days (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        func pad(_ v: Int64, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))"
    }
}
