/// The device side of the relay's HTTP API, named once for the server's routes, the client library and the CLI.
///
/// - `POST /v1/register`, `Authorization: key=<client key>` → `{"token","secret","sender_id"}`.
/// - `GET /v1/stream`, `Authorization: Bearer <secret>` (or `?ticket=<stream ticket>`), `Last-Event-ID` when
///   resuming → `text/event-stream`, one event per message.
/// - `POST /v1/ack`, `Authorization: Bearer <secret>`, body `{"ids":[…]}`.
/// - `POST /v1/stream-ticket`, `Authorization: Bearer <secret>` → a short-lived, single-use ticket for browsers.
/// - `DELETE /v1/register`, `Authorization: Bearer <secret>`.
public enum DeviceAPI {
    /// `/v1/register`: `POST` registers, `DELETE` unregisters.
    public static let registerPath = "/v1/register"
    /// `/v1/stream`: the device's event stream.
    public static let streamPath = "/v1/stream"
    /// `/v1/ack`: acknowledges messages by id.
    public static let acknowledgePath = "/v1/ack"
    /// `/v1/stream-ticket`: exchanges the device secret for a stream ticket (for `EventSource`).
    public static let streamTicketPath = "/v1/stream-ticket"
    /// The query parameter of `/v1/stream` that carries a stream ticket.
    public static let ticketParameter = "ticket"
    /// The request header that resumes a stream (and acknowledges everything up to it).
    public static let lastEventIDField = "Last-Event-ID"
    /// The stream's content type.
    public static let eventStreamContentType = "text/event-stream"
    /// The scheme of the device secret in `Authorization`: `Bearer <secret>`.
    public static let bearerPrefix = "Bearer "
    /// The scheme of the client key in `Authorization` on registration: `key=<client key>`.
    public static let clientKeyPrefix = "key="
}
