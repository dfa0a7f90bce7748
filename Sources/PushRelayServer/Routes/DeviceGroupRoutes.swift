import HTTPTypes
import Logging
import NIOCore
import PushRelayCore
import PushRelayHTTP
import PushRelayStore
import PushRelayWire

/// FCM's device-group API, `/fcm/notification` (also `/gcm/notification`): `POST` creates a group of a project's
/// devices, or adds members to one or removes members from one; `GET ?notification_key_name=…` looks a group's
/// key up. A send addresses the group with `to: <notification_key>` on `/fcm/send` (``SendDispatcher``).
///
/// Credentials as the Instance ID routes (``ServerCredentials``), plus FCM's `project_id` header, which must be the
/// project's sender id. Answers are FCM's: `200 {"notification_key": "…"}`, or ``FCMDeviceGroupError``'s
/// `{"error": "…"}` with `400` (`401` for the credentials); a refused request changes nothing.
struct DeviceGroupRoutes: Sendable {
    let store: any PushStore
    let logger: Logger
    /// `max_request_body_size`.
    let maxBodyBytes: Int

    /// `project_id`: FCM's header naming the sender id the request is for.
    static let projectIDHeader = HTTPField.Name("project_id")!

    /// `POST /fcm/notification`: `create`, `add` or `remove`.
    func change(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let project: Project
        switch try await authorize(request) {
        case .success(let found): project = found
        case .failure(let error): return Self.answer(error)
        }
        let body = try await request.body.collect(upTo: maxBodyBytes)
        let operation: FCMDeviceGroupOperation
        do {
            operation = try FCMDeviceGroupOperation.parse(json: Array(body.readableBytesView))
        } catch {
            return Self.answer(error)
        }
        let change: DeviceGroupOperation
        switch (operation.kind, operation.name, operation.notificationKey) {
        case (.create, let name?, _): change = .create(name: name, tokens: operation.registrationIDs)
        case (.add, let name, let key?):
            change = .add(notificationKey: key.rawValue, name: name, tokens: operation.registrationIDs)
        case (.remove, let name, let key?):
            change = .remove(notificationKey: key.rawValue, name: name, tokens: operation.registrationIDs)
        default:
            // Parsing requires a name for create and a key for add and remove.
            return Self.answer(.badRequest("notification_key_name or notification_key is missing"))
        }
        switch try await store.changeDeviceGroup(change, project: project.id) {
        case .done(let key):
            logger.debug(
                "device group changed",
                metadata: ["relay.project": "\(project.name)", "relay.operation": "\(operation.kind.rawValue)"])
            return Self.key(key)
        case .nameTaken: return Self.answer(.nameExists)
        case .notFound: return Self.answer(.notFound)
        case .nameMismatch: return Self.answer(.nameMismatch)
        case .tooManyMembers: return Self.answer(.tooManyMembers)
        case .tokenNotRegistered(let token): return Self.answer(.notRegistered(token))
        case .tokenOfAnotherProject(let token): return Self.answer(.mismatchSenderId(token))
        }
    }

    /// `GET /fcm/notification?notification_key_name=…`: the key of the project's group of that name.
    func lookUp(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let project: Project
        switch try await authorize(request) {
        case .success(let found): project = found
        case .failure(let error): return Self.answer(error)
        }
        guard let name = request.queryParameter("notification_key_name"), !name.isEmpty else {
            return Self.answer(.badRequest("notification_key_name is required"))
        }
        guard let key = try await store.deviceGroupKey(name: name, project: project.id) else {
            return Self.answer(.notFound)
        }
        return Self.key(key)
    }

    /// The project of the credentials (401 without one), which must be the one `project_id` names (its sender id).
    private func authorize(_ request: HTTPServerRequest) async throws -> Result<Project, FCMDeviceGroupError> {
        guard let project = try await ServerCredentials.project(of: request, store: store) else {
            return .failure(.unauthenticated)
        }
        guard let header = request.head.headerFields.onlyValue(for: Self.projectIDHeader),
            let senderID = SenderID(header), senderID.value == UInt64(project.senderID)
        else { return .failure(.invalidProjectID) }
        return .success(project)
    }

    /// `200 {"notification_key": "…"}`.
    private static func key(_ key: String) -> HTTPServerResponse {
        JSONResponse.ok(["notification_key": .string(key)])
    }

    /// An error's `{"error": "…"}` with its status.
    static func answer(_ error: FCMDeviceGroupError) -> HTTPServerResponse {
        var fields = HTTPFields()
        fields[.contentType] = "application/json; charset=UTF-8"
        return HTTPServerResponse(
            status: HTTPResponse.Status(code: error.httpStatus), headerFields: fields,
            body: .bytes(ByteBuffer(bytes: error.jsonBody())))
    }
}
