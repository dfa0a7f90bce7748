import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PushRelayCore
import PushRelayHTTP
import PushRelayStore
import PushRelayWire

/// Stream tickets for browsers: `POST /v1/stream-ticket` with the device's `Authorization: Bearer <secret>` answers
/// `{"ticket": "tkt_…", "expires_in": 30}`; `GET /v1/stream?ticket=tkt_…` then opens the stream as the secret would
/// (once, within the lifetime). Everything else about the stream (`Last-Event-ID`, acknowledgements) is unchanged.
struct StreamTicketRoutes: Sendable {
    let store: any PushStore
    let devices: DeviceRoutes
    let logger: Logger
    private let book: NIOLockedValueBox<StreamTicketBook>

    init(store: any PushStore, devices: DeviceRoutes, logger: Logger, book: StreamTicketBook = StreamTicketBook()) {
        self.store = store
        self.devices = devices
        self.logger = logger
        self.book = NIOLockedValueBox(book)
    }

    /// `POST /v1/stream-ticket` with `Authorization: Bearer <secret>`.
    func issue(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        guard let secret = DeviceRoutes.bearer(request) else {
            return JSONResponse.unauthorized("missing Bearer secret")
        }
        guard try await store.authenticateDevice(secret: secret) != nil else {
            return JSONResponse.unauthorized("unknown device secret")
        }
        var generator = SecureRandom()
        let (ticket, lifetime) = book.withLockedValue { book in
            (book.issue(secret: secret, now: .now, using: &generator), book.lifetime)
        }
        guard let ticket else {
            var response = JSONResponse.error(.serviceUnavailable, "UNAVAILABLE", "too many stream tickets outstanding")
            response.head.headerFields[.retryAfter] = "1"
            return response
        }
        return JSONResponse.ok([
            "ticket": .string(ticket),
            "expires_in": .integer(lifetime.components.seconds),
        ])
    }

    /// `GET /v1/stream`: with `?ticket=`, the ticket stands for the device secret (once); otherwise the request goes
    /// to the device routes as it is.
    func stream(_ request: HTTPServerRequest, _ body: ByteBuffer, _ promise: HTTPResponsePromise) {
        guard let ticket = request.queryParameter(DeviceAPI.ticketParameter) else {
            return devices.stream(request, body, promise)
        }
        // A request refused for what it carries leaves the ticket unused.
        if DeviceRoutes.LastEventID(request) == .invalid { return promise.succeed(DeviceRoutes.LastEventID.refusal) }
        guard let secret = book.withLockedValue({ $0.redeem(ticket, now: .now) }) else {
            return promise.succeed(JSONResponse.unauthorized("unknown, used or expired stream ticket"))
        }
        var request = request
        request.head.headerFields[.authorization] = DeviceAPI.bearerPrefix + secret
        devices.stream(request, body, promise)
    }
}
