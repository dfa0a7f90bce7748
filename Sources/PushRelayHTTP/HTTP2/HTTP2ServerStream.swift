import HTTPTypes
import NIOCore

/// One HTTP/2 request/response exchange of a server connection: one small object in the connection handler's
/// table, not a channel. Confined to the connection's event loop.
final class HTTP2ServerStream {
    /// Where the exchange is.
    enum Phase {
        /// Header fields are arriving.
        case headers
        /// An `.immediate` or `.collected` route: the body is collected, the handler runs when it is complete.
        case collecting(HTTPHandler)
        /// An `.async` route: the body streams to the running handler.
        case streamingBody(RequestBodyStream)
        /// The request is complete (or ignored); waiting for the handler's answer.
        case awaitingResponse
        /// The response head is submitted; the body (if any) is being sent.
        case responding
    }

    var phase: Phase = .headers
    /// The request must have arrived whole by then, or the stream is reset.
    var requestDeadline: NIODeadline?

    /// Whether the request is still arriving (its deadline applies).
    var isReceivingRequest: Bool {
        switch phase {
        case .headers, .collecting, .streamingBody: true
        case .awaitingResponse, .responding: false
        }
    }
    // Pseudo-header fields and fields of the request head.
    var method: String?
    var scheme: String?
    var authority: String?
    var path: String?
    var headerFields = HTTPFields()
    /// The `content-length` field, parsed as it arrives (an `HTTPFields` lookup by name costs more).
    var contentLength: Int?
    var headerBytes = 0
    var headerTooLarge = false
    var headerInvalid = false

    var head: HTTPRequest?
    var pathParameters: [String: String] = [:]
    /// What the request's gate handed over (``HTTPGateDecision/admit(_:)``).
    var admission: (any AnyObject & Sendable)?
    var maxBodyBytes = 0
    var receivedBodyBytes = 0
    var body = ByteBuffer()
    /// Body bytes received whose window is not reopened yet (waiting for the body budget).
    var unconsumedBodyBytes = 0
    /// Body bytes whose window was reopened, held against the connection's and the server's body budget until
    /// the request is answered or the stream closes.
    var heldBodyBytes = 0
    /// The route's gate is checking the request (``HTTPGateDecision/verify(_:)``): the body is collected, the
    /// handler waits.
    var verifying = false
    /// The request ended while the gate was checking it: the handler runs once the check allows it.
    var endedWhileVerifying = false
    /// The request asked `expect: 100-continue` and its body has not been invited yet.
    var expectsContinue = false
    /// The task running the route's handler (`.collected`, `.async`): cancelled when the stream closes, so that a
    /// reset (or the connection going away) stops the work done for it.
    var handlerTask: Task<Void, Never>?

    /// The complete response body not yet handed to nghttp2 (`.bytes` responses).
    var outbound = ByteBuffer()
    /// nghttp2 took bytes of ``outbound`` since the connection's last deadline check: the peer's window moved.
    var sentSinceCheck = false
    /// While the request is handled or its fixed answer waits for the peer's flow-control window: the next check.
    /// An answer that made no progress since the previous check is reset then (a client that never opens its window
    /// cannot hold answers in memory for ever).
    var responseDeadline: NIODeadline?
    /// The writer of a `.stream` response.
    var writer: HTTP2StreamBodyWriter?
    /// Our answer has ended while the peer's request has not (an early answer: a gate's refusal, a body over the
    /// limit, no such route). The stream waits for the peer to end it; more of the unwanted body gets it reset.
    var answeredEarly = false
    /// The reset of an early-answered stream is scheduled.
    var earlyResetScheduled = false

    /// Counts a field against the header list limit; false once the head is too large.
    private func admit(nameLength: Int, valueLength: Int, limit: Int) -> Bool {
        headerBytes += nameLength + valueLength + 32
        if headerBytes > limit { headerTooLarge = true }
        return !headerTooLarge
    }

    /// Adds one received pseudo-header field.
    func addPseudoHeader(_ name: NGHTTP2PseudoHeader, value: String, limit: Int) {
        guard admit(nameLength: 8, valueLength: value.utf8.count, limit: limit) else { return }
        switch name {
        case .method: method = value
        case .scheme: scheme = value
        case .authority: authority = value
        case .path: path = value
        case .status, .other: break
        }
    }

    /// Adds a regular field (`name` lowercase, both validated by nghttp2). A field equal, name and value, to the
    /// one at the same place in `recent` (the connection's previous request head) is that field again.
    func addHeader(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, limit: Int, recent: HTTPFields) {
        guard admit(nameLength: name.count, valueLength: value.count, limit: limit) else { return }
        if name.count == 14, Self.contentLengthName.withUTF8Buffer({ HTTPField.same(UnsafeRawBufferPointer($0), name) }) {
            contentLength = Int(String(decoding: value, as: UTF8.self))
        }
        // Read over the connection's previous head (`HTTPFields.reading(over:)`), as the HTTP/1.1 parser does;
        // ``makeHead()`` drops the fields past the last.
        let position = fieldCount
        if position == 0 { headerFields = .reading(over: recent) }
        if position < headerFields.count {
            let kept = headerFields[position]
            if kept.rawNameIs(name), kept.valueIs(value) {
                fieldCount += 1
                return
            }
        }
        guard let fieldName = HTTPField.Name(parsed: String(decoding: name, as: UTF8.self)) else {
            headerInvalid = true
            return
        }
        headerFields.put(HTTPField(name: fieldName, value: String(decoding: value, as: UTF8.self)), at: position)
        fieldCount += 1
    }

    /// How many regular fields this head has so far (``headerFields`` may hold more: the previous head's, past them).
    private var fieldCount = 0

    private static let contentLengthName: StaticString = "content-length"

    /// The request head, or `nil` when the fields do not make one: no valid method, an invalid field name, or a
    /// `host` that names another authority than `:authority` (or comes twice), which RFC 9113 §8.3.1 asks a server
    /// to treat as malformed (a proxy and this server could route it differently).
    func makeHead() -> HTTPRequest? {
        guard let method = method.flatMap({ HTTPRequest.Method($0) }), !headerInvalid else { return nil }
        var fields = headerFields
        fields.keepFirst(fieldCount)
        headerFields = [:]
        fieldCount = 0
        if let host = fields[HTTP2ServerStream.hostField] {
            guard fields[values: HTTP2ServerStream.hostField].count == 1 else { return nil }
            if let authority {
                guard host.lowercased() == authority.lowercased() else { return nil }
            } else {
                authority = host
            }
        }
        return HTTPRequest(method: method, scheme: scheme, authority: authority, path: path, headerFields: fields)
    }
}

extension HTTP2ServerStream {
    /// `host`, which HTTP/2 requests may carry instead of `:authority`.
    static let hostField = HTTPField.Name("host")!
}
