import CNghttp2
import HTTPTypes
import NIOCore
import PushRelayWire

// The one place that touches libnghttp2 (Debian 1.52: `mem_recv`/`mem_send`, `nghttp2_data_provider`; no `…2` APIs).
// Every pointer stays in this file: callbacks are capture-less closures that recover the session object from the
// `user_data` with `Unmanaged`, header and data bytes are handed up as Swift values, and the C session is freed in
// `deinit`.

/// What a session reports while it parses input (`receive`) or produces output (`send`). Called synchronously on
/// the connection's event loop, from inside those two calls.
protocol NGHTTP2SessionDelegate: AnyObject {
    /// A HEADERS frame opens a request (server) or starts a response (client) on `streamID`.
    func sessionBeginHeaders(streamID: Int32)
    /// The header block of `streamID` passed the header list limit: its further fields are not handed up (the
    /// session still decodes them, to keep the HPACK table in step) and, far past the limit, the connection fails.
    func sessionHeaderListTooLarge(streamID: Int32)
    /// A frame that asks for no work arrived (PING, SETTINGS, WINDOW_UPDATE, PRIORITY, an empty DATA frame without
    /// END_STREAM); return `false` to fail the connection as flooded.
    func sessionControlFrame() -> Bool
    /// One regular header field of the block begun by `sessionBeginHeaders`: its name (lowercase, validated by
    /// nghttp2) and value bytes, valid during the call only.
    func sessionHeader(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
    /// One pseudo-header field (`:method`, `:path`, …) of the block.
    func sessionPseudoHeader(streamID: Int32, name: NGHTTP2PseudoHeader, value: String)
    /// The header block is complete; `endStream` when no body follows.
    func sessionHeadersComplete(streamID: Int32, endStream: Bool)
    /// A trailer block ended the stream.
    func sessionTrailersComplete(streamID: Int32)
    /// Body bytes arrived.
    func sessionData(streamID: Int32, chunk: borrowing NGHTTP2DataChunk)
    /// A DATA frame with END_STREAM arrived.
    func sessionEndStream(streamID: Int32)
    /// The stream closed; `errorCode` is 0 for a clean close, else the RST_STREAM code.
    func sessionStreamClosed(streamID: Int32, errorCode: UInt32)
    /// Our side of `streamID` has ended (a frame with END_STREAM was sent) while the peer is still sending.
    func sessionSentEndStreamBeforePeer(streamID: Int32)
    /// The peer sent GOAWAY.
    func sessionGoAway(lastStreamID: Int32, errorCode: UInt32)
    /// nghttp2 may send up to `maxLength` body bytes of `streamID`: return them, or `.deferred` to pause the
    /// stream until `resumeData(streamID:)`.
    func sessionReadBody(streamID: Int32, maxLength: Int) -> NGHTTP2BodyChunk
}

/// The pseudo-header fields of requests and responses.
enum NGHTTP2PseudoHeader {
    case method, scheme, authority, path, status, other

    init(_ name: UnsafeBufferPointer<UInt8>) {
        // Decided by length and one distinguishing byte; nghttp2 has already validated the field name.
        switch (name.count, name.count > 1 ? name[1] : 0) {
        case (7, UInt8(ascii: "m")): self = .method
        case (7, UInt8(ascii: "s")): self = name[2] == UInt8(ascii: "c") ? .scheme : .status
        case (10, UInt8(ascii: "a")): self = .authority
        case (5, UInt8(ascii: "p")): self = .path
        default: self = .other
        }
    }
}

/// Bytes of one DATA frame, valid only inside `sessionData`; copy them out with `write(into:)`.
struct NGHTTP2DataChunk: ~Copyable {
    fileprivate let pointer: UnsafeRawBufferPointer

    /// The number of bytes.
    var count: Int { pointer.count }

    /// Appends the bytes to `buffer`.
    func write(into buffer: inout ByteBuffer) {
        buffer.writeBytes(pointer)
    }
}

/// The answer to `sessionReadBody`.
enum NGHTTP2BodyChunk {
    /// These bytes (at most `maxLength`); `endStream` ends the body after them.
    case bytes(ByteBuffer, endStream: Bool)
    /// Nothing to send now; the stream waits for `resumeData`.
    case deferred
}

/// Limits a session is created with.
struct NGHTTP2SessionLimits: Sendable {
    var maxConcurrentStreams: Int
    var initialWindowSize: Int
    var maxHeaderListSize: Int
    /// Decoded header bytes of one block past which the connection fails: a block that references a large HPACK
    /// table entry thousands of times (an HPACK bomb) costs a connection error after a few references.
    var headerListAbortSize: Int {
        max(4 * maxHeaderListSize, 64 * 1024)
    }
    var streamResetBurst: Int
    var streamResetRatePerSecond: Int
    var maxContinuations: Int
    var maxSettings: Int
    var maxOutboundAck: Int
}

/// A fatal error of an nghttp2 session: the connection must be closed.
struct NGHTTP2Error: Error, CustomStringConvertible {
    let code: Int32
    var description: String { "nghttp2: " + String(cString: nghttp2_strerror(code)) }
    /// The peer did not start with the HTTP/2 client preface.
    var isBadPreface: Bool { code == NGHTTP2_ERR_BAD_CLIENT_MAGIC.rawValue }
    /// The peer flooded us with frames that need answers.
    var isFlooded: Bool { code == NGHTTP2_ERR_FLOODED.rawValue }
    /// A callback failed the connection (a frame flood, a header block far past its limit).
    var isCallbackFailure: Bool { code == NGHTTP2_ERR_CALLBACK_FAILURE.rawValue }
    /// libnghttp2 stopped reading a peer that sends too much: frames that need answers (`NGHTTP2_ERR_FLOODED`) or
    /// a header block in too many CONTINUATION frames. It queues no GOAWAY for these; the connection owes one
    /// (`ENHANCE_YOUR_CALM`) before it closes.
    var isPeerExcess: Bool {
        code == NGHTTP2_ERR_FLOODED.rawValue || code == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS.rawValue
    }
}

/// One `nghttp2_session`: a server or a client side of one HTTP/2 connection. Not thread-safe: used only on the
/// connection's event loop by the handler that owns it.
final class NGHTTP2Session {
    /// Whether this side is the server.
    enum Role { case server, client }

    private var session: OpaquePointer?
    /// The handler that owns this session; it outlives the session's use (unowned, no retain cycle).
    unowned(unsafe) var delegate: any NGHTTP2SessionDelegate
    private let allocator: ByteBufferAllocator
    /// Scratch storage for header blocks, reused across submits (taken out for each one: ``submitHeaderBlock(_:submit:)``).
    private var headerBlock = HeaderBlock()
    /// The header list limit, and the decoded bytes of the header block being received (blocks do not interleave).
    private let maxHeaderListSize: Int
    private let headerListAbortSize: Int
    private var headerBlockBytes = 0

    init(
        role: Role,
        limits: NGHTTP2SessionLimits,
        delegate: any NGHTTP2SessionDelegate,
        allocator: ByteBufferAllocator
    ) {
        self.delegate = delegate
        self.allocator = allocator
        self.maxHeaderListSize = limits.maxHeaderListSize
        self.headerListAbortSize = limits.headerListAbortSize
        headerBlock.reserveCapacity(bytes: 512, fields: 16)

        var callbacks: OpaquePointer?
        precondition(nghttp2_session_callbacks_new(&callbacks) == 0, "nghttp2: out of memory")
        defer { nghttp2_session_callbacks_del(callbacks) }
        Self.installCallbacks(callbacks)

        var option: OpaquePointer?
        precondition(nghttp2_option_new(&option) == 0, "nghttp2: out of memory")
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_no_http_messaging(option, 0)
        nghttp2_option_set_stream_reset_rate_limit(
            option, UInt64(limits.streamResetBurst), UInt64(limits.streamResetRatePerSecond))
        nghttp2_option_set_max_continuations(option, limits.maxContinuations)
        nghttp2_option_set_max_settings(option, limits.maxSettings)
        nghttp2_option_set_max_outbound_ack(option, limits.maxOutboundAck)
        nghttp2_option_set_max_send_header_block_length(option, 64 * 1024)
        // Windows are reopened by the application (`consume`), not as bytes arrive: the client as its reader takes
        // the response body, the server as its requests' body budget allows. DATA nghttp2 ignores itself (closed
        // streams, padding) it counts as consumed.
        nghttp2_option_set_no_auto_window_update(option, 1)

        let userData = Unmanaged.passUnretained(self).toOpaque()
        let rc: Int32
        switch role {
        case .server: rc = nghttp2_session_server_new2(&session, callbacks, userData, option)
        case .client: rc = nghttp2_session_client_new2(&session, callbacks, userData, option)
        }
        precondition(rc == 0, "nghttp2: cannot create a session (\(rc))")

        var settings = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                value: UInt32(clamping: limits.maxConcurrentStreams)),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                value: UInt32(clamping: limits.initialWindowSize)),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                value: UInt32(clamping: limits.maxHeaderListSize)),
        ]
        if role == .client {
            settings.append(
                nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0))
        }
        let settingsRC = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), settings, settings.count)
        precondition(settingsRC == 0, "nghttp2: cannot submit SETTINGS (\(settingsRC))")
    }

    deinit {
        nghttp2_session_del(session)
    }

    // MARK: Input and output

    /// Feeds received bytes; callbacks fire from inside. Throws a fatal `NGHTTP2Error`.
    func receive(_ buffer: ByteBuffer) throws(NGHTTP2Error) {
        let rc = buffer.withUnsafeReadableBytes { bytes -> Int in
            guard let base = bytes.baseAddress else { return 0 }
            return nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        }
        if rc < 0 { throw NGHTTP2Error(code: Int32(rc)) }
    }

    /// Appends the frames nghttp2 wants to send to `buffer`, until nothing is left or `buffer` holds `limit`
    /// bytes. Returns whether more output is pending. Throws a fatal `NGHTTP2Error`.
    func send(into buffer: inout ByteBuffer, limit: Int) throws(NGHTTP2Error) -> Bool {
        while buffer.readableBytes < limit {
            var data: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &data)
            if count < 0 { throw NGHTTP2Error(code: Int32(count)) }
            if count == 0 { return false }
            buffer.writeBytes(UnsafeRawBufferPointer(start: data, count: count))
        }
        return nghttp2_session_want_write(session) != 0
    }

    /// Whether nghttp2 has something to send.
    var wantsWrite: Bool { nghttp2_session_want_write(session) != 0 }

    /// Whether the connection is still needed: false once GOAWAY has been exchanged and no stream is open.
    var isAlive: Bool { nghttp2_session_want_read(session) != 0 || nghttp2_session_want_write(session) != 0 }

    // MARK: Submitting

    /// Submits a response head; with `hasBody` the body is read through `sessionReadBody`.
    func submitResponse(streamID: Int32, status: Int, headerFields: HTTPFields, contentLength: Int?, hasBody: Bool) {
        let rc = submitHeaderBlock { block in
            block.append(":status", decimal: status)
            // Every response says when (RFC 9110 §6.6.1), unless the handler set it.
            if headerFields[.date] == nil { block.append("date", HTTPDate.now()) }
            block.append(headerFields)
            if let contentLength { block.append("content-length", decimal: contentLength) }
        } submit: { nva, count in
            if hasBody {
                var provider = Self.dataProvider
                return nghttp2_submit_response(session, streamID, nva, count, &provider)
            }
            return nghttp2_submit_response(session, streamID, nva, count, nil)
        }
        if rc != 0 { resetStream(streamID: streamID, errorCode: NGHTTP2_INTERNAL_ERROR.rawValue) }
    }

    /// Submits an informational (1xx) head, such as `100 Continue`, before the stream's response.
    func submitInformational(streamID: Int32, status: Int) {
        let rc = submitHeaderBlock { $0.append(":status", decimal: status) } submit: { nva, count in
            nghttp2_submit_headers(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, nil, nva, count, nil)
        }
        if rc < 0 { resetStream(streamID: streamID, errorCode: NGHTTP2_INTERNAL_ERROR.rawValue) }
    }

    /// Submits a request; returns the new stream id, or `nil` when no stream can be opened (GOAWAY received,
    /// ids exhausted).
    func submitRequest(_ head: HTTPRequest, hasBody: Bool) -> Int32? {
        let rc = submitHeaderBlock { block in
            block.append(":method", head.method.rawValue)
            block.append(":scheme", head.scheme ?? "http")
            if let authority = head.authority { block.append(":authority", authority) }
            block.append(":path", head.path ?? "/")
            block.append(head.headerFields)
        } submit: { nva, count in
            if hasBody {
                var provider = Self.dataProvider
                return nghttp2_submit_request(session, nil, nva, count, &provider, nil)
            }
            return nghttp2_submit_request(session, nil, nva, count, nil, nil)
        }
        return rc > 0 ? rc : nil
    }

    /// Tells nghttp2 that a deferred stream has body bytes (or its end) to send.
    func resumeData(streamID: Int32) {
        _ = nghttp2_session_resume_data(session, streamID)
    }

    /// Resets a stream with an HTTP/2 error code.
    func resetStream(streamID: Int32, errorCode: UInt32) {
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, errorCode)
    }

    /// Sends the first GOAWAY of a graceful shutdown (last stream id 2^31-1): no new streams after one round trip.
    func submitShutdownNotice() {
        _ = nghttp2_submit_shutdown_notice(session)
    }

    /// Sends the final GOAWAY with the last stream id processed; open streams below it run to completion.
    func submitGoAway(errorCode: UInt32 = NGHTTP2_NO_ERROR.rawValue) {
        let lastStreamID = nghttp2_session_get_last_proc_stream_id(session)
        _ = nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStreamID, errorCode, nil, 0)
    }

    /// Starts a server session from an HTTP/1.1 `Upgrade: h2c` request: `settings` is the decoded
    /// `HTTP2-Settings` payload; stream 1 is the upgraded request, half-closed from the client.
    func upgradeServer(settingsPayload: [UInt8], isHeadRequest: Bool) -> Bool {
        let rc = settingsPayload.withUnsafeBufferPointer { payload in
            nghttp2_session_upgrade2(session, payload.baseAddress, payload.count, isHeadRequest ? 1 : 0, nil)
        }
        return rc == 0
    }

    /// The window the peer lets us send on `streamID`, for tests and diagnostics.
    func remoteWindowSize(streamID: Int32) -> Int {
        Int(nghttp2_session_get_stream_remote_window_size(session, streamID))
    }

    /// Marks `count` received body bytes of `streamID` as consumed on the stream's window (client sessions:
    /// manual window updates; the connection window is released on receipt with `consumeConnection`).
    func consume(streamID: Int32, count: Int) {
        guard count > 0 else { return }
        _ = nghttp2_session_consume_stream(session, streamID, count)
    }

    /// Marks `count` received body bytes of `streamID` as consumed on both the stream's and the connection's
    /// window (server sessions); on a stream that is gone, on the connection's only.
    func consumeStreamAndConnection(streamID: Int32, count: Int) {
        guard count > 0 else { return }
        // nghttp2 counts the connection's share first, and skips the stream's when the stream is gone.
        _ = nghttp2_session_consume(session, streamID, count)
    }

    /// Marks `count` received bytes as consumed on the connection window.
    func consumeConnection(count: Int) {
        guard count > 0 else { return }
        _ = nghttp2_session_consume_connection(session, count)
    }

    // MARK: Header blocks

    /// Builds a header block with `build` and lends it to `submit` as `nghttp2_nv`s. The scratch block is taken out
    /// of the session for this (emptied, its storage kept) and put back after: the appends touch a local value, not
    /// the session's stored property at every field.
    @inline(__always)
    private func submitHeaderBlock(
        _ build: (inout HeaderBlock) -> Void, submit: (UnsafePointer<nghttp2_nv>, Int) -> Int32
    ) -> Int32 {
        var block = HeaderBlock()
        swap(&block, &headerBlock)
        block.removeAll()
        build(&block)
        let rc = block.withNameValues(submit)
        headerBlock = block
        return rc
    }

    // MARK: Callbacks

    /// Calls `body` with the session a callback's user data points to, without retaining it (the session is alive
    /// for the whole callback: nghttp2 calls back only from inside a call on it).
    @inline(__always)
    private static func with<Result>(
        _ userData: UnsafeMutableRawPointer?, _ body: (NGHTTP2Session) -> Result
    ) -> Result {
        Unmanaged<NGHTTP2Session>.fromOpaque(userData!)._withUnsafeGuaranteedRef(body)
    }

    private static let dataProvider = nghttp2_data_provider(
        source: nghttp2_data_source(ptr: nil),
        read_callback: { _, streamID, buf, length, dataFlags, _, userData -> Int in
            let read = NGHTTP2Session.with(userData) { $0.delegate.sessionReadBody(streamID: streamID, maxLength: length) }
            switch read {
            case .deferred:
                return Int(NGHTTP2_ERR_DEFERRED.rawValue)
            case .bytes(let chunk, let endStream):
                let count = chunk.withUnsafeReadableBytes { bytes -> Int in
                    let count = min(bytes.count, length)
                    if count > 0 { UnsafeMutableRawPointer(buf!).copyMemory(from: bytes.baseAddress!, byteCount: count) }
                    return count
                }
                if endStream { dataFlags!.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
                return count
            }
        }
    )

    private static func installCallbacks(_ callbacks: OpaquePointer?) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            NGHTTP2Session.with(userData) { session in
                session.headerBlockBytes = 0
                let category = frame.pointee.headers.cat
                if category == NGHTTP2_HCAT_REQUEST || category == NGHTTP2_HCAT_RESPONSE {
                    session.delegate.sessionBeginHeaders(streamID: frame.pointee.hd.stream_id)
                }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) {
            _, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            return NGHTTP2Session.with(userData) { session -> Int32 in
                // Counted before anything is copied, trailers included (RFC 7541's 32 bytes of overhead per field).
                let before = session.headerBlockBytes
                session.headerBlockBytes += nameLength + valueLength + 32
                if session.headerBlockBytes > session.headerListAbortSize {
                    // Decoding stops here (an HPACK bomb costs nothing more); the peer is told why before the close.
                    session.submitGoAway(errorCode: NGHTTP2_ENHANCE_YOUR_CALM.rawValue)
                    return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
                }
                let category = frame.pointee.headers.cat
                guard category == NGHTTP2_HCAT_REQUEST || category == NGHTTP2_HCAT_RESPONSE else { return 0 }
                if session.headerBlockBytes > session.maxHeaderListSize {
                    if before <= session.maxHeaderListSize {
                        session.delegate.sessionHeaderListTooLarge(streamID: frame.pointee.hd.stream_id)
                    }
                    return 0
                }
                let nameBytes = UnsafeBufferPointer(start: name, count: nameLength)
                let valueBytes = UnsafeBufferPointer(start: value, count: valueLength)
                let delegate = session.delegate
                if nameLength > 0, nameBytes[0] == UInt8(ascii: ":") {
                    delegate.sessionPseudoHeader(
                        streamID: frame.pointee.hd.stream_id, name: NGHTTP2PseudoHeader(nameBytes),
                        value: String(decoding: valueBytes, as: UTF8.self))
                } else {
                    delegate.sessionHeader(
                        streamID: frame.pointee.hd.stream_id, name: UnsafeRawBufferPointer(nameBytes),
                        value: UnsafeRawBufferPointer(valueBytes))
                }
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame else { return 0 }
            return NGHTTP2Session.with(userData) { session -> Int32 in
                let delegate = session.delegate
                let header = frame.pointee.hd
                let endStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
                switch UInt32(header.type) {
                case NGHTTP2_HEADERS.rawValue:
                    let category = frame.pointee.headers.cat
                    if category == NGHTTP2_HCAT_REQUEST || category == NGHTTP2_HCAT_RESPONSE {
                        delegate.sessionHeadersComplete(streamID: header.stream_id, endStream: endStream)
                    } else if endStream {
                        delegate.sessionTrailersComplete(streamID: header.stream_id)
                    }
                case NGHTTP2_DATA.rawValue:
                    if endStream {
                        delegate.sessionEndStream(streamID: header.stream_id)
                    } else if header.length == frame.pointee.data.padlen, !delegate.sessionControlFrame() {
                        return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
                    }
                case NGHTTP2_PING.rawValue, NGHTTP2_SETTINGS.rawValue, NGHTTP2_WINDOW_UPDATE.rawValue,
                    NGHTTP2_PRIORITY.rawValue:
                    if !delegate.sessionControlFrame() { return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue }
                case NGHTTP2_GOAWAY.rawValue:
                    delegate.sessionGoAway(
                        lastStreamID: frame.pointee.goaway.last_stream_id, errorCode: frame.pointee.goaway.error_code)
                default:
                    break
                }
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) {
            _, _, streamID, data, length, userData in
            let chunk = NGHTTP2DataChunk(pointer: UnsafeRawBufferPointer(start: data, count: length))
            NGHTTP2Session.with(userData) { $0.delegate.sessionData(streamID: streamID, chunk: chunk) }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { session, frame, userData in
            guard let frame, frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 else { return 0 }
            let type = UInt32(frame.pointee.hd.type)
            guard type == NGHTTP2_HEADERS.rawValue || type == NGHTTP2_DATA.rawValue else { return 0 }
            let streamID = frame.pointee.hd.stream_id
            if nghttp2_session_get_stream_remote_close(session, streamID) == 0 {
                NGHTTP2Session.with(userData) { $0.delegate.sessionSentEndStreamBeforePeer(streamID: streamID) }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, userData in
            NGHTTP2Session.with(userData) { $0.delegate.sessionStreamClosed(streamID: streamID, errorCode: errorCode) }
            return 0
        }
    }
}

/// HTTP/2 error codes used above the C layer.
enum HTTP2ErrorCode {
    static let noError: UInt32 = NGHTTP2_NO_ERROR.rawValue
    static let protocolError: UInt32 = NGHTTP2_PROTOCOL_ERROR.rawValue
    static let internalError: UInt32 = NGHTTP2_INTERNAL_ERROR.rawValue
    static let refusedStream: UInt32 = NGHTTP2_REFUSED_STREAM.rawValue
    static let cancel: UInt32 = NGHTTP2_CANCEL.rawValue
    static let enhanceYourCalm: UInt32 = NGHTTP2_ENHANCE_YOUR_CALM.rawValue
}

/// The fields of one header block as nghttp2 takes them: their name and value bytes one after another, and where each
/// field's name and value are. Built field by field, then lent to nghttp2 as an `nghttp2_nv` array
/// (``withNameValues(_:)``), which nghttp2 copies before the call returns.
struct HeaderBlock {
    private var bytes: [UInt8] = []
    private var ranges: [(name: Range<Int>, value: Range<Int>)] = []

    mutating func reserveCapacity(bytes byteCount: Int, fields: Int) {
        bytes.reserveCapacity(byteCount)
        ranges.reserveCapacity(fields)
    }

    /// Empties the block, keeping its storage.
    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        ranges.removeAll(keepingCapacity: true)
    }

    /// Appends a field: `name`, then `value`, append their bytes.
    @inline(__always)
    private mutating func append(name: (inout [UInt8]) -> Void, value: (inout [UInt8]) -> Void) {
        let nameStart = bytes.count
        name(&bytes)
        let valueStart = bytes.count
        value(&bytes)
        ranges.append((nameStart..<valueStart, valueStart..<bytes.count))
    }

    /// A field of a fixed name (pseudo-header fields with their colon): its bytes come from the literal, no `String`.
    mutating func append(_ name: StaticString, _ value: String) {
        append(name: { JSONWriter.appendRaw(name, to: &$0) }, value: { $0.append(contentsOf: value.utf8) })
    }

    /// A field of a fixed name and a decimal value (`:status`, `content-length`), written as digits in place.
    mutating func append(_ name: StaticString, decimal value: Int) {
        append(name: { JSONWriter.appendRaw(name, to: &$0) }, value: { JSONWriter.appendDecimal(Int64(value), to: &$0) })
    }

    /// A head's fields, without the connection-specific ones HTTP/2 forbids (RFC 9113 §8.2.2).
    mutating func append(_ fields: HTTPFields) {
        for field in fields {
            let name = field.name.canonicalName
            // None of the forbidden names is 12 or 14 bytes long, the lengths of `content-type` and
            // `content-length`, which nearly every response has.
            switch name.utf8.count {
            case 7, 10, 16, 17:
                switch name {
                case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade": continue
                default: break
                }
            default: break
            }
            append(name: { $0.append(contentsOf: name.utf8) }, value: { $0.append(contentsOf: field.value.utf8) })
        }
    }

    /// Calls `body` with the block as `nghttp2_nv`s pointing into its bytes (valid only during the call).
    mutating func withNameValues(_ body: (UnsafePointer<nghttp2_nv>, Int) -> Int32) -> Int32 {
        let ranges = self.ranges
        return bytes.withUnsafeMutableBufferPointer { bytes in
            let base = bytes.baseAddress!
            return withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: ranges.count) { nva in
                for (index, range) in ranges.enumerated() {
                    nva[index] = nghttp2_nv(
                        name: base + range.name.lowerBound,
                        value: base + range.value.lowerBound,
                        namelen: range.name.count,
                        valuelen: range.value.count,
                        flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
                }
                return body(UnsafePointer(nva.baseAddress!), ranges.count)
            }
        }
    }
}
