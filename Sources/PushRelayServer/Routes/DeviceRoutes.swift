import Foundation
import HTTPTypes
import Logging
import NIOCore
import PushRelayCore
import PushRelayHTTP
import PushRelayStore
import PushRelayWire

/// The device side of the API: register, unregister, the event stream, acknowledgements, and the device's own
/// topic subscriptions.
struct DeviceRoutes: Sendable {
    let store: any PushStore
    let hub: DeliveryHub
    /// How committed rows reach the streams' event loops: one wake-up per loop per commit.
    let handoff: EventLoopHandoff
    let metrics: RelayMetrics
    let logger: Logger
    /// `max_request_body_size`: the largest register or ack body.
    let maxBodyBytes: Int
    /// `registration_rate` and `registration_rate_per_address`.
    let registrationQuotas: RegistrationQuotas
    /// `max_devices_per_project` (0: no limit).
    let maxDevicesPerProject: Int
    /// Where a stream's opening and an acknowledgement are noted for `device_expiry`.
    let sightings: DeviceSightings

    /// `POST /v1/register` with `Authorization: key=<client key>` and `{"project", "app", "platform"}`
    /// → `{"token", "secret", "sender_id"}`.
    ///
    /// Past `registration_rate_per_address` (counted before the key is checked, so guessing keys is throttled too)
    /// or the project's `registration_rate`: `429 RESOURCE_EXHAUSTED` with `Retry-After`, nothing registered.
    func register(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        if let wait = registrationQuotas.admit(address: request.remoteAddress) {
            return JSONResponse.tooManyRequests("too many registrations from this address; retry later", retryAfter: wait)
        }
        guard let header = request.head.headerFields.onlyValue(for: .authorization), let key = AuthorizationHeader.serverKey(header)
        else { return JSONResponse.unauthorized("missing Authorization: key=<client key>", scheme: "key") }
        let object = try await JSONResponse.parseObject(request, upTo: maxBodyBytes)
        guard let projectName = object["project"]?.stringValue, !projectName.isEmpty else {
            return JSONResponse.error(.badRequest, "INVALID_ARGUMENT", "\"project\" must be a non-empty string")
        }
        guard let app = Self.optionalString(object["app"]), let platform = Self.optionalString(object["platform"]) else {
            return JSONResponse.error(.badRequest, "INVALID_ARGUMENT", "\"app\" and \"platform\" must be strings")
        }
        guard app.utf8.count <= 255, platform.utf8.count <= 32 else {
            return JSONResponse.error(.badRequest, "INVALID_ARGUMENT", "\"app\" or \"platform\" too long")
        }
        guard let project = try await store.authenticateClientKey(String(key), project: projectName) else {
            return JSONResponse.unauthorized("unknown project or wrong client key", scheme: "key")
        }
        if let wait = registrationQuotas.admit(project: project.id) {
            return JSONResponse.tooManyRequests("too many registrations for this project; retry later", retryAfter: wait)
        }
        let registration: DeviceRegistration
        do {
            registration = try await store.registerDevice(
                project: project.id, app: app, platform: platform,
                deviceLimit: maxDevicesPerProject > 0 ? maxDevicesPerProject : nil)
        } catch let error as StoreError where error.code == .resourceExhausted {
            // No Retry-After: room comes only as devices unregister or expire.
            return JSONResponse.error(
                .tooManyRequests, "RESOURCE_EXHAUSTED",
                "project \(project.name) has \(maxDevicesPerProject) devices, its max_devices_per_project")
        }
        logger.info("device registered", metadata: ["relay.project": "\(project.name)", "relay.device": "\(registration.device.id)"])
        return JSONResponse.ok(
            [
                "token": .string(registration.device.token),
                "secret": .string(registration.secret),
                "sender_id": .string(String(project.senderID)),
            ]
        )
    }

    /// An optional string member: "" when absent or null, nil when it is another type (the request is refused).
    private static func optionalString(_ value: JSONValue?) -> String? {
        switch value {
        case nil, .null?: ""
        case .string(let string)?: string
        default: nil
        }
    }

    /// `DELETE /v1/register` with `Authorization: Bearer <secret>`: later sends to the token answer `NotRegistered`,
    /// and the device's open stream on this node ends at once (other nodes end theirs at their next heartbeat).
    func unregister(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        guard let secret = Self.bearer(request) else { return JSONResponse.unauthorized("missing Bearer secret") }
        guard let device = try await store.unregisterDevice(secret: secret) else {
            return JSONResponse.unauthorized("unknown device secret")
        }
        hub.end(devices: [device.id])  // its stream here, if any, ends now (on other nodes: at their next heartbeat)
        logger.info("device unregistered", metadata: ["relay.device": "\(device.id)"])
        return JSONResponse.ok([:])
    }

    /// `GET /v1/stream` with `Authorization: Bearer <secret>` (and optionally `Last-Event-ID`), on the event-loop
    /// path (a `.promised` route), without a task: the device and its project come from memory when cached, else
    /// from a read on a store thread whose answer comes back to this loop; a `Last-Event-ID` is acknowledged through
    /// the writer first. (As an async route a stream's opening crossed to Swift's cooperative pool and back for the
    /// route and again for its backlog: a reconnection storm after a restart paid each hop per device.)
    func stream(_ request: HTTPServerRequest, _ body: ByteBuffer, _ promise: HTTPResponsePromise) {
        guard let secret = Self.bearer(request) else {
            return promise.succeed(JSONResponse.unauthorized("missing Bearer secret"))
        }
        let lastEventID = LastEventID(request)
        device(secret: secret, promise) { device in self.authenticated(device, lastEventID, promise) }
    }

    /// Runs `next` on the promise's loop with the device of `secret` — from memory at once, else after its look-up
    /// on a store thread — or answers `401` (unknown secret) or the store's error.
    private func device(
        secret: String, _ promise: HTTPResponsePromise, _ next: @escaping @Sendable (Device) -> Void
    ) {
        if let device = store.cachedDevice(secret: secret) {
            return next(device)
        }
        store.authenticateDevice(secret: secret) { result in
            self.onLoop(of: promise) {
                switch result {
                case .failure(let error): promise.fail(error)
                case .success(nil): promise.succeed(JSONResponse.unauthorized("unknown device secret"))
                case .success(let device?): next(device)
                }
            }
        }
    }

    /// The stream's opening once its device is known: the `Last-Event-ID`'s acknowledgement, then its project.
    private func authenticated(_ device: Device, _ lastEventID: LastEventID, _ promise: HTTPResponsePromise) {
        sightings.saw(device.id)
        switch lastEventID {
        case .none:
            opening(device, promise)
        case .invalid:
            promise.succeed(LastEventID.refusal)
        case .id(let id):
            store.acknowledge(device: device.id, upTo: id) { result in
                self.onLoop(of: promise) {
                    switch result {
                    case .failure(let error):
                        promise.fail(error)
                    case .success(let count):
                        self.metrics.messagesAcked(count: count)
                        self.opening(device, promise)
                    }
                }
            }
        }
    }

    /// Answers with the stream of `device` once its project (its sender id) is known.
    private func opening(_ device: Device, _ promise: HTTPResponsePromise) {
        store.project(id: device.project) { result in
            self.onLoop(of: promise) {
                switch result {
                case .failure(let error):
                    promise.fail(error)
                case .success(nil):
                    promise.succeed(JSONResponse.unauthorized("unknown device secret"))
                case .success(let project?):
                    var fields = HTTPFields()
                    fields[.contentType] = "text/event-stream"
                    fields[.cacheControl] = "no-cache"
                    let stream = DeviceStream(
                        device: device,
                        senderID: SenderID(UInt64(project.senderID)),
                        store: self.store,
                        hub: self.hub,
                        handoff: self.handoff,
                        metrics: self.metrics,
                        logger: self.logger
                    )
                    promise.succeed(
                        HTTPServerResponse(status: .ok, headerFields: fields, body: .detachedStream { writer in
                            stream.start(writer: writer)
                        }))
                }
            }
        }
    }

    /// Runs `work` on the promise's event loop: at once when already there (an answer from memory), else through
    /// the handoff (a store thread's answer; the answers of one read burst share a wake-up of the loop).
    private func onLoop(of promise: HTTPResponsePromise, _ work: @escaping @Sendable () -> Void) {
        if promise.eventLoop.inEventLoop {
            work()
        } else {
            handoff.execute(on: promise.eventLoop, work)
        }
    }

    /// The `Last-Event-ID` of a stream request: the id up to which the device has everything (acknowledged as the
    /// stream opens).
    enum LastEventID: Equatable {
        case none
        case id(MessageID)
        /// Not a storable message id: the request is refused and changes nothing.
        case invalid

        init(_ request: HTTPServerRequest) {
            guard let value = request.head.headerFields.firstValue(for: .lastEventID) else {
                self = .none
                return
            }
            self = MessageID(storable: value.trimmingCharacters(in: .whitespaces)).map { .id($0) } ?? .invalid
        }

        static var refusal: HTTPServerResponse {
            JSONResponse.error(.badRequest, "INVALID_ARGUMENT", "Last-Event-ID must be a message id")
        }
    }

    /// `POST /v1/ack` with `Authorization: Bearer <secret>` and `{"ids": ["<message id>", …]}` (strings or numbers),
    /// on the event-loop path (a `.promised` route), as sends are: the body is read here; a device whose secret is in
    /// memory (``PushStore/cachedDevice(secret:)``) is acknowledged at once, any other after its look-up on a store
    /// thread (``PushStore/authenticateDevice(secret:completion:)``); no task either way, the answer returning
    /// through the handoff with the other answers of that commit.
    func acknowledge(_ request: HTTPServerRequest, _ body: ByteBuffer, _ promise: HTTPResponsePromise) {
        guard let secret = Self.bearer(request) else {
            return promise.succeed(JSONResponse.unauthorized("missing Bearer secret"))
        }
        let ids: [MessageID]
        do {
            ids = try Self.acknowledgedIDs(body)
        } catch {
            return promise.fail(error)
        }
        device(secret: secret, promise) { device in self.acknowledge(ids, of: device, promise) }
    }

    private func acknowledge(_ ids: [MessageID], of device: Device, _ promise: HTTPResponsePromise) {
        sightings.saw(device.id)
        let eventLoop = promise.eventLoop
        store.acknowledge(device: device.id, ids: ids) { result in
            self.handoff.execute(on: eventLoop) { promise.complete(result.map(self.acknowledged)) }
        }
    }

    /// The ids of an acknowledgement body, or an `HTTPError` with the JSON `400 INVALID_ARGUMENT` to answer.
    private static func acknowledgedIDs(_ body: ByteBuffer) throws -> [MessageID] {
        let object = try JSONResponse.parseObject(body)
        guard let values = object["ids"]?.arrayValue else {
            throw JSONResponse.thrown(.badRequest, "INVALID_ARGUMENT", "\"ids\" must be an array of message ids")
        }
        var ids: [MessageID] = []
        ids.reserveCapacity(values.count)
        for value in values {
            guard let id = value.stringValue.flatMap({ MessageID(storable: $0) })
                ?? value.int64Value.flatMap({ MessageID(storable: String($0)) })
            else { throw JSONResponse.thrown(.badRequest, "INVALID_ARGUMENT", "not a message id: \(value)") }
            ids.append(id)
        }
        return ids
    }

    /// The answer to an acknowledgement of `count` messages, counted.
    private func acknowledged(_ count: Int) -> HTTPServerResponse {
        metrics.messagesAcked(count: count)
        return JSONResponse.ok(["acknowledged": .integer(Int64(count))])
    }

    static func bearer(_ request: HTTPServerRequest) -> String? {
        guard let header = request.head.headerFields.onlyValue(for: .authorization) else { return nil }
        return AuthorizationHeader.bearer(header).map(String.init)
    }
}

extension HTTPField.Name {
    static let lastEventID = HTTPField.Name("Last-Event-ID")!
}

extension Logger {
    func with(_ key: String, _ value: String) -> Logger {
        var copy = self
        copy[metadataKey: key] = .string(value)
        return copy
    }
}
