import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import PushRelayWire

/// Serves HTTP/1.1 on one connection: keep-alive, chunked streaming responses, the routes' body limits, and
/// `Upgrade: h2c` to HTTP/2 on the first request. NIOHTTP1's decoder parses requests; responses are written as bytes
/// (``HTTP1ResponseEncoding``).
///
/// One request is served at a time. Parts of requests a client pipelines behind the one being answered are held, in
/// order, with any parse error among them, and served when its response has ended; while some are held the
/// connection is not read (the socket's buffer and TCP hold the rest). A connection with nothing held keeps reading:
/// a request in flight does not un-arm and re-arm the socket's read interest, which NIO's `HTTPServerPipelineHandler`
/// did for every request (two `epoll_ctl` calls).
final class HTTP1ServerConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = Never
    typealias OutboundOut = ByteBuffer

    /// Input that arrived behind the request being answered.
    private enum Held {
        case part(HTTPServerRequestPart)
        case error(HTTPParserError)
    }

    private enum State {
        case idle
        case collecting(HTTPHandler)
        case streamingBody(AsyncThrowingStream<ByteBuffer, any Error>.Continuation)
        /// The request is complete or its rest is ignored; the handler's answer is pending.
        case awaitingResponse
        case responding
        case upgrading(settingsPayload: [UInt8])
    }

    private let shared: HTTPServerShared
    private var state = State.idle
    private var context: ChannelHandlerContext?
    private var head: HTTPRequest?
    private var pathParameters: [String: String] = [:]
    /// What the current request's gate handed over (``HTTPGateDecision/admit(_:)``).
    private var admission: (any Sendable)?
    private var keepAlive = true
    private var maxBodyBytes = 0
    private var receivedBodyBytes = 0
    private var body = ByteBuffer()
    /// The route's gate is checking the request (``HTTPGateDecision/verify(_:)``): the body is collected, the
    /// handler waits; `endedWhileVerifying` when the body is already whole.
    private var verifying = false
    /// The task running the current request's handler: cancelled when the connection goes away mid-request.
    private var handlerTask: Task<Void, Never>?
    private var endedWhileVerifying = false
    private var requestCount = 0
    /// Bumped for every request, so an answer that arrives late for a finished request is dropped.
    private var requestID = 0
    private var writer: HTTP1StreamBodyWriter?
    /// The current streamed body is sent chunked (an HTTP/1.0 client's ends with the connection instead).
    private var streamIsChunked = true
    /// The current request came as HTTP/1.0 (its client cannot read a chunked body).
    private var requestIsHTTP10 = false
    /// The current request asked `Expect: 100-continue` and has not been told to go on yet: its client holds the
    /// body back until a `100 Continue` (curl waits a second for one before it sends anyway).
    private var expectsContinue = false
    private var draining = false
    /// The last response ended with `connection: close`: its output is shut, input is read and dropped until the
    /// peer closes or the linger time passes (``LingeringClose``).
    private var closing = false
    /// The peer half-closed: nothing more will be read; the connection closes once the answer in flight is written.
    private var inputClosed = false
    /// The current request's end has been read: whatever comes next belongs to a pipelined request.
    private var requestEnded = true
    /// Pipelined input waiting for the current response to end.
    private var held = CircularBuffer<Held>()
    private var deliveringHeld = false
    /// A `read` was held back because input is held.
    private var readHeld = false
    /// The idle deadline between requests (the next head must be complete by then) and the body deadline.
    private var timer: ConnectionTimer?

    init(shared: HTTPServerShared) {
        self.shared = shared
    }

    /// NIOHTTP1's request decoder plus this handler, in pipeline order.
    static func pipeline(shared: HTTPServerShared) -> [any ChannelHandler] {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderListSize = decoderHeadLimit(shared)
        // No HTTPServerProtocolErrorHandler: `errorCaught` answers malformed input itself, with a body that says
        // what was wrong (NIO's handler answers an empty 400, even to a head past the size limit).
        return [
            ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes, limitConfiguration: limits)),
            HTTP1ServerConnectionHandler(shared: shared),
        ]
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let timer = ConnectionTimer(eventLoop: context.eventLoop) { [weak self] in self?.deadlinePassed() }
        timer.set(in: shared.configuration.idleTimeout)
        self.timer = timer
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        abandonRequest()
        timer?.cancel()
        timer = nil
        self.context = nil
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        armBodyDeadlineIfIncomplete()
        context.fireChannelReadComplete()
    }

    /// A body still incomplete after a read gets its deadline (one clock read, only for such requests).
    private func armBodyDeadlineIfIncomplete() {
        switch state {
        case .collecting, .streamingBody:
            if let timer, timer.deadline == nil { timer.set(in: shared.configuration.requestTimeout) }
        case .idle, .awaitingResponse, .responding, .upgrading:
            break
        }
    }

    /// Reads stop while pipelined input is held, and resume when it has been served.
    func read(context: ChannelHandlerContext) {
        if held.isEmpty {
            context.read()
        } else {
            readHeld = true
        }
    }

    /// The current request has been read whole and is being answered: input arriving now is pipelined.
    private var isAnswering: Bool {
        guard requestEnded else { return false }
        if case .idle = state { return false }
        return true
    }

    /// Whether input arriving now waits behind the request being answered.
    private var holdsInput: Bool { !held.isEmpty || isAnswering }

    /// Serves held input in order until a request is being answered again (or none is left), then resumes reading.
    private func deliverHeld() {
        guard !deliveringHeld else { return }
        deliveringHeld = true
        defer { deliveringHeld = false }
        var delivered = false
        while !closing, !isAnswering, let next = held.first {
            held.removeFirst()
            delivered = true
            switch next {
            case .part(let part): receive(part)
            case .error(let error): parserErrorCaught(error)
            }
        }
        if delivered { armBodyDeadlineIfIncomplete() }
        if held.isEmpty, readHeld, !closing, let context {
            readHeld = false
            context.read()
        }
    }

    /// The idle deadline passed with no complete request head (an idle or a slowloris connection), or a body did
    /// not arrive whole in time.
    private func deadlinePassed() {
        if closing {
            context?.close(promise: nil)  // the linger time has passed
            return
        }
        switch state {
        case .awaitingResponse where inputClosed, .collecting where inputClosed && requestEnded:
            // The peer's end came while its answer was being worked out, and the answer is not ready: the client
            // most likely left (a close and a half-close look alike), so the work for it stops.
            shared.logger.debug("closing HTTP/1.1 connection: the peer ended its input and no answer came in time")
            abandonRequest()
            context?.close(promise: nil)
        case .idle:
            shared.logger.debug("closing HTTP/1.1 connection: no request within the idle timeout")
            context?.close(promise: nil)
        case .streamingBody(let continuation):
            continuation.finish(throwing: HTTPTransportError.timeout("request body not received in time"))
            rejectForRoute(HTTPError(.requestTimeout, "request body not received in time"))
        case .collecting:
            rejectForRoute(HTTPError(.requestTimeout, "request body not received in time"))
        case .awaitingResponse, .responding, .upgrading:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        abandonRequest()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { writer?.writable() }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? HTTPServerConnectionEvent, case .drain = event {
            draining = true
            keepAlive = false
            if case .idle = state { context.close(promise: nil) }
            writer?.drain()
        } else if let event = event as? ChannelEvent, event == .inputClosed {
            peerClosedInput(context: context)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// The peer will send nothing more (TCP half-close). A request it sent whole is answered, then the connection
    /// closes; with nothing in flight it closes now; a body that will never be complete, or an event stream whose
    /// reader has gone, ends the connection.
    private func peerClosedInput(context: ChannelHandlerContext) {
        inputClosed = true
        keepAlive = false
        if closing {
            context.close(promise: nil)  // the end a lingering close waits for
            return
        }
        switch state {
        case .idle:
            if held.isEmpty { context.close(promise: nil) }
        case .awaitingResponse, .collecting where requestEnded:
            // Answered, then closed (endResponse), if the answer comes within the linger time: a client that
            // half-closed reads it; one that closed is gone, and its work is cancelled then (deadlinePassed). A
            // request read whole whose gate is still checking it counts as one being answered.
            timer?.set(in: LingeringClose.time)
        case .collecting, .streamingBody, .responding, .upgrading:
            abandonRequest()
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else {
            shared.logger.debug("closing HTTP/1.1 connection", metadata: ["http.error": "\(error)"])
            abandonRequest()
            context.close(promise: nil)
            return
        }
        if closing { return }
        if holdsInput {
            held.append(.error(parserError))
            return
        }
        parserErrorCaught(parserError)
    }

    /// Malformed input: answered when no response has begun, then the connection closes (the parser cannot
    /// resynchronise).
    private func parserErrorCaught(_ parserError: HTTPParserError) {
        guard let context else { return }
        shared.logger.debug("closing HTTP/1.1 connection", metadata: ["http.error": "\(parserError)"])
        switch state {
        case .idle, .collecting, .streamingBody, .awaitingResponse:
            if case .streamingBody(let continuation) = state {
                continuation.finish(throwing: HTTPTransportError.protocolError("malformed request"))
            }
            state = .awaitingResponse
            requestID += 1
            keepAlive = false
            let error =
                if case .headerOverflow = parserError {
                    HTTPError(
                        .requestHeaderFieldsTooLarge,
                        "request head (path and header fields) larger than \(Self.decoderHeadLimit(shared)) bytes")
                } else {
                    HTTPError(.badRequest, "malformed HTTP/1.1 request")
                }
            respond(HTTPResponder.response(for: error), requestID: requestID)
        case .responding, .upgrading:
            abandonRequest()
            context.close(promise: nil)
        }
    }

    /// The largest head the decoder parses; past it the request is answered 431 unread.
    static func decoderHeadLimit(_ shared: HTTPServerShared) -> Int {
        max(shared.configuration.maxHeaderListSize * 4, 64 * 1024)
    }

    // MARK: Requests

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if closing { return }
        let part = unwrapInboundIn(data)
        if holdsInput {
            held.append(.part(part))
            return
        }
        receive(part)
    }

    private func receive(_ part: HTTPServerRequestPart) {
        switch part {
        case .head(let head): receiveHead(head)
        case .body(let buffer): receiveBody(buffer)
        case .end: receiveEnd()
        }
    }

    private func receiveHead(_ nioHead: HTTPRequestHead) {
        timer?.set(nil)
        requestEnded = false
        requestCount += 1
        requestID += 1
        receivedBodyBytes = 0
        body = ByteBuffer()
        verifying = false
        endedWhileVerifying = false
        requestIsHTTP10 = nioHead.version.major == 1 && nioHead.version.minor == 0
        keepAlive = nioHead.isKeepAlive && !draining
        // An HTTP/1.0 message with Transfer-Encoding: its framing is in doubt (an HTTP/1.0 intermediary does not
        // know chunked), so the connection closes after it (RFC 9112 §6.1).
        if requestIsHTTP10, nioHead.headers.contains(name: "transfer-encoding") { keepAlive = false }
        expectsContinue = false
        if Self.headSize(nioHead) > shared.configuration.maxHeaderListSize {
            // In the route's error format (and with its CORS headers) when the head names one.
            reject(with: HTTPResponder.response(
                for: HTTPError(.requestHeaderFieldsTooLarge), to: Self.makeRequest(nioHead), by: shared.responder))
            return
        }
        guard let head = Self.makeRequest(nioHead) else {
            reject(.init(.badRequest, "malformed request head"))
            return
        }
        self.head = head
        if let problem = Self.hostProblem(nioHead) {
            rejectForRoute(.init(.badRequest, problem))
            return
        }
        if let refusal = Self.unsupportedCoding(nioHead) {
            rejectForRoute(refusal)
            return
        }
        if requestCount == 1, let settings = Self.h2cUpgradeSettings(nioHead) {
            state = .upgrading(settingsPayload: settings)
            return
        }
        let match = shared.responder.route(for: head)
        guard case .matched(let handler, let maxBodyBytes, let pathParameters, let gate) = match else {
            // A client waiting for `100 Continue` holds its body back and may send its next request instead: the
            // answer closes the connection, so that nothing is read as that body (RFC 9110 §10.1.1).
            if Self.expectsContinue(head, http10: requestIsHTTP10) { keepAlive = false }
            state = .awaitingResponse
            respond(HTTPResponder.response(forUnmatched: match, to: head, by: shared.responder)!, requestID: requestID)
            return
        }
        if let length = head.headerFields.firstValue(for: .contentLength).flatMap(Int.init), length > maxBodyBytes {
            rejectForRoute(.payloadTooLarge)
            return
        }
        admission = nil
        if let gate {
            switch gate(head) {
            case .allow:
                break
            case .admit(let value):
                admission = value
            case .deny(let response):
                // Answered unread: the connection closes after the answer, the body is never buffered.
                keepAlive = false
                state = .awaitingResponse
                respond(response, requestID: requestID)
                return
            case .verify(let check):
                verify(check)
            }
        }
        // Told to go on at once, or once the gate's check allowed the request (a refused one is answered unread).
        expectsContinue = Self.expectsContinue(head, http10: requestIsHTTP10)
        if !verifying { sendContinueIfExpected() }
        self.maxBodyBytes = maxBodyBytes
        self.pathParameters = pathParameters
        switch handler {
        case .immediate, .collected, .promised:
            state = .collecting(handler)
        case .async(let handler):
            let hasBody = head.headerFields.firstValue(for: .contentLength).map { $0 != "0" } ?? (head.headerFields.firstValue(for: .transferEncoding) != nil)
            let requestBody: HTTPRequestBody
            if hasBody {
                let (stream, continuation) = AsyncThrowingStream<ByteBuffer, any Error>.makeStream()
                state = .streamingBody(continuation)
                requestBody = HTTPRequestBody(stream: stream)
            } else {
                state = .awaitingResponse
                requestBody = .empty
            }
            let request = HTTPServerRequest(
                head: head, body: requestBody, pathParameters: pathParameters,
                remoteAddress: context?.channel.remoteAddress, protocolVersion: .http1_1, admission: admission)
            runAsync(handler, request)
        }
    }

    private func receiveBody(_ buffer: ByteBuffer) {
        receivedBodyBytes += buffer.readableBytes
        switch state {
        case .collecting:
            if receivedBodyBytes > maxBodyBytes { return rejectForRoute(.payloadTooLarge) }
            var buffer = buffer
            body.writeBuffer(&buffer)
        case .streamingBody(let continuation):
            if receivedBodyBytes > maxBodyBytes {
                continuation.finish(throwing: HTTPError.payloadTooLarge)
                return rejectForRoute(.payloadTooLarge)
            }
            continuation.yield(buffer)
        case .idle, .awaitingResponse, .responding, .upgrading:
            break
        }
    }

    private func receiveEnd() {
        requestEnded = true
        switch state {
        case .collecting(let handler):
            if verifying {
                endedWhileVerifying = true
                return
            }
            runCollected(handler)
        case .streamingBody(let continuation):
            state = .awaitingResponse
            continuation.finish()
        case .upgrading(let settings):
            upgradeToHTTP2(settingsPayload: settings)
        case .idle, .awaitingResponse, .responding:
            break
        }
    }

    /// Starts the gate's check off the event loop; its verdict comes back here.
    private func verify(_ check: @escaping @Sendable () async -> HTTPServerResponse?) {
        guard let context else { return }
        verifying = true
        let eventLoop = context.eventLoop
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        let requestID = self.requestID
        Task {
            let response = await check()
            eventLoop.execute { bound.value.verified(requestID: requestID, response: response) }
        }
    }

    /// The gate's verdict: a response answers the request and closes the connection after it (the rest of the body
    /// is not read); nil runs the handler if the body is whole (else when it is).
    private func verified(requestID: Int, response: HTTPServerResponse?) {
        guard requestID == self.requestID, verifying else { return }
        verifying = false
        if let response {
            guard case .collecting = state else { return }
            body = ByteBuffer()
            keepAlive = false
            state = .awaitingResponse
            respond(response, requestID: requestID)
            return
        }
        if endedWhileVerifying, case .collecting(let handler) = state {
            runCollected(handler)
        } else {
            sendContinueIfExpected()
        }
    }

    /// Writes `100 Continue` if the current request waits for one (RFC 9110, 10.1.1): once per request, before
    /// its final answer, never to an HTTP/1.0 client.
    private func sendContinueIfExpected() {
        guard expectsContinue, let context else { return }
        expectsContinue = false
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(staticString: Self.continueResponse)), promise: nil)
    }

    private static let continueResponse: StaticString = "HTTP/1.1 100 Continue\r\n\r\n"

    /// Whether `head` asks for a `100 Continue` this server should send: `Expect: 100-continue` (any case) on an
    /// HTTP/1.1 request that announces a body.
    static func expectsContinue(_ head: HTTPRequest, http10: Bool) -> Bool {
        guard !http10, let expect = head.headerFields[.expect], expect.lowercased() == "100-continue" else { return false }
        if let length = head.headerFields[.contentLength] { return length != "0" }
        return head.headerFields[.transferEncoding] != nil
    }

    /// The whole body has arrived (and the gate, if any, allowed it): runs the handler.
    private func runCollected(_ handler: HTTPHandler) {
        state = .awaitingResponse
        guard let head else { return }
        let request = HTTPServerRequest(
            head: head, body: HTTPRequestBody(body), pathParameters: pathParameters,
            remoteAddress: context?.channel.remoteAddress, protocolVersion: .http1_1, admission: admission)
        let body = self.body
        self.body = ByteBuffer()
        switch handler {
        case .immediate(let handler):
            respond(handler(request, body), requestID: requestID)
        case .promised(let handler):
            runPromised(handler, request, body)
        case .collected(let handler), .async(let handler):
            runAsync(handler, request)
        }
    }

    /// Answers with an error and closes the connection after it (the rest of the request is not read).
    private func reject(_ error: HTTPError) {
        reject(with: HTTPResponder.response(for: error))
    }

    /// ``reject(_:)`` for the request routed last (`head`), in its route's error format.
    private func rejectForRoute(_ error: HTTPError) {
        reject(with: HTTPResponder.response(for: error, to: head, by: shared.responder))
    }

    private func reject(with response: HTTPServerResponse) {
        keepAlive = false
        state = .awaitingResponse
        respond(response, requestID: requestID)
    }

    private func runAsync(
        _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse,
        _ request: HTTPServerRequest
    ) {
        guard let context else { return }
        let eventLoop = context.eventLoop
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        let (requestID, responder) = (self.requestID, shared.responder)
        handlerTask = Task {
            let response = await HTTPResponder.run(handler, request, responder: responder)
            eventLoop.execute { bound.value.respond(response, requestID: requestID) }
        }
    }

    private func runPromised(
        _ handler: @Sendable (HTTPServerRequest, ByteBuffer, EventLoopPromise<HTTPServerResponse>) -> Void,
        _ request: HTTPServerRequest,
        _ body: ByteBuffer
    ) {
        guard let context else { return }
        let promise = context.eventLoop.makePromise(of: HTTPServerResponse.self)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let (requestID, responder) = (self.requestID, shared.responder)
        promise.futureResult.whenComplete { result in
            bound.value.respond(HTTPResponder.response(for: result, to: request.head, by: responder), requestID: requestID)
        }
        handler(request, body, promise)
    }

    private func abandonRequest() {
        handlerTask?.cancel()
        handlerTask = nil
        if case .streamingBody(let continuation) = state {
            continuation.finish(throwing: HTTPTransportError.connectionClosed())
        }
        state = .awaitingResponse
        writer?.close()
        writer = nil
        requestID += 1
        held.removeAll()
    }

    // MARK: Responses

    private func respond(_ response: HTTPServerResponse, requestID: Int) {
        guard let context, requestID == self.requestID else { return }
        switch state {
        case .responding, .idle, .upgrading: return
        case .streamingBody(let continuation):
            // Answered before the body was read: the rest of it is dropped and the connection not reused.
            continuation.finish()
            keepAlive = false
        case .collecting:
            keepAlive = false
        case .awaitingResponse:
            break
        }
        state = .responding
        // The handler is done: its task has nothing left to cancel, and the handle would keep the finished task's
        // memory (≈ 3 kB with its stack slab) for as long as a stream answers.
        handlerTask = nil
        let isHead = head?.method == .head
        head = nil  // not needed past this point; a long stream should not keep the request's fields
        let status = response.head.status
        let bodyAllowed = status.code >= 200 && status.code != 204 && status.code != 304
        var out = context.channel.allocator.buffer(capacity: 256)
        func writeHead(_ framing: HTTP1ResponseEncoding.Framing) {
            HTTP1ResponseEncoding.writeHead(
                status: status, fields: response.head.headerFields, framing: bodyAllowed ? framing : .none,
                close: !keepAlive, keepAliveForHTTP10: keepAlive && requestIsHTTP10, into: &out)
        }
        switch response.body {
        case .empty:
            writeHead(.length(0))
            endResponse(with: out)
        case .bytes(let bytes):
            writeHead(.length(bytes.readableBytes))
            if isHead || !bodyAllowed || bytes.readableBytes == 0 {
                endResponse(with: out)
            } else if bytes.readableBytes <= Self.bodyCopyLimit {
                out.writeImmutableBuffer(bytes)
                endResponse(with: out)
            } else {
                context.write(wrapOutboundOut(out), promise: nil)
                endResponse(with: bytes)
            }
        case .stream, .detachedStream:
            // An HTTP/1.0 client cannot read chunks: its body ends when the connection closes.
            streamIsChunked = !requestIsHTTP10
            if !streamIsChunked { keepAlive = false }
            writeHead(streamIsChunked ? .chunked : .none)
            if isHead || !bodyAllowed {
                endResponse(with: out)
                return
            }
            context.writeAndFlush(wrapOutboundOut(out), promise: nil)
            let writer = HTTP1StreamBodyWriter(
                connection: self, eventLoop: context.eventLoop, allocator: context.channel.allocator)
            if draining { writer.drain() }
            self.writer = writer
            startStreamingBody(response.body, writer: writer)
        }
    }

    /// A body up to this size is copied behind its head (one buffer, one write); a larger one is written after it.
    static let bodyCopyLimit = 16 * 1024

    /// Writes one chunk of a streaming body; returns whether the channel can take more now.
    func writeStreamChunk(_ buffer: ByteBuffer, from writer: HTTP1StreamBodyWriter) -> Bool {
        guard let context, writer === self.writer else { return false }
        if streamIsChunked {
            var chunk = context.channel.allocator.buffer(
                capacity: buffer.readableBytes + HTTP1ResponseEncoding.chunkFramingBytes)
            HTTP1ResponseEncoding.writeChunk(buffer, into: &chunk)
            context.writeAndFlush(wrapOutboundOut(chunk), promise: nil)
        } else {
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        }
        return context.channel.isWritable
    }

    /// Ends a streaming body (`failed`: the handler threw, so the connection closes without a proper end).
    func finishStream(from writer: HTTP1StreamBodyWriter, failed: Bool) {
        guard let context, writer === self.writer else { return }
        self.writer = nil
        if failed {
            context.close(promise: nil)
            return
        }
        var end = context.channel.allocator.buffer(capacity: 8)
        if streamIsChunked { end.writeStaticString(HTTP1ResponseEncoding.lastChunk) }
        endResponse(with: end)
    }

    /// Writes the response's last bytes; then serves held pipelined input, or, when the connection is not kept alive,
    /// closes it lingering (``LingeringClose``): closing with unread input would reset it.
    private func endResponse(with last: ByteBuffer) {
        guard let context else { return }
        state = .idle
        head = nil
        if keepAlive {
            timer?.set(in: shared.configuration.idleTimeout)
            context.writeAndFlush(wrapOutboundOut(last), promise: nil)
            deliverHeld()
        } else if inputClosed {
            // Nothing more can come from the peer: no lingering, close once the answer is out.
            closing = true
            held.removeAll()
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(last)).whenComplete { _ in channel.close(promise: nil) }
        } else {
            closing = true
            held.removeAll()
            context.writeAndFlush(wrapOutboundOut(last), promise: nil)
            LingeringClose.start(context, timer: timer)
            if readHeld {
                readHeld = false
                context.read()  // what the peer still sends is read and dropped
            }
        }
    }

    // MARK: h2c upgrade

    /// The decoded `HTTP2-Settings` payload when the request asks for `Upgrade: h2c` and has no body.
    static func h2cUpgradeSettings(_ head: HTTPRequestHead) -> [UInt8]? {
        let upgrade = head.headers[canonicalForm: "upgrade"].map { $0.lowercased() }
        guard upgrade.contains("h2c") else { return nil }
        let connection = head.headers[canonicalForm: "connection"].map { $0.lowercased() }
        guard connection.contains("upgrade"), connection.contains("http2-settings") else { return nil }
        let settings = head.headers["http2-settings"]
        guard settings.count == 1, let payload = Base64URL.decode(settings[0]) else { return nil }
        if head.headers[canonicalForm: "transfer-encoding"].count > 0 { return nil }
        if let length = head.headers.first(name: "content-length"), length != "0" { return nil }
        return payload
    }

    private func upgradeToHTTP2(settingsPayload: [UInt8]) {
        guard let context, var head else { return }
        state = .responding
        var out = context.channel.allocator.buffer(capacity: 80)
        out.writeStaticString("HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: h2c\r\n\r\n")
        context.writeAndFlush(wrapOutboundOut(out), promise: nil)
        head.headerFields[.upgrade] = nil
        head.headerFields[.connection] = nil
        head.headerFields[HTTPField.Name("http2-settings")!] = nil
        if head.scheme == nil { head.scheme = "http" }
        let http2 = HTTP2ServerConnectionHandler(
            shared: shared, upgrade: HTTP2UpgradeRequest(settingsPayload: settingsPayload, head: head))
        let pipeline = context.pipeline.syncOperations
        do {
            // This handler leaves first; the decoder goes last and hands any bytes it already read past the request
            // to the HTTP/2 handler.
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            pipeline.removeHandler(context: context, promise: nil)
            try pipeline.addHandler(http2)
            // The bytes the decoder hands over (a preface sent in the same write as the upgrade request) arrive
            // as a read of their own: end it, or the HTTP/2 handler holds its answers until the next socket read.
            let removed = context.eventLoop.makePromise(of: Void.self)
            let channelPipeline = context.pipeline
            removed.futureResult.whenSuccess { channelPipeline.fireChannelReadComplete() }
            pipeline.removeHandler(decoder, promise: removed)
        } catch {
            shared.logger.debug("h2c upgrade failed", metadata: ["http.error": "\(error)"])
            context.close(promise: nil)
        }
    }

    // MARK: Head checks

    /// Why the head's `Host` is refused, or nil (RFC 9112 §3.2: an HTTP/1.1 request has exactly one, with a valid
    /// value; an HTTP/1.0 one may have none).
    static func hostProblem(_ head: HTTPRequestHead) -> String? {
        let hosts = head.headers["host"]
        if hosts.count > 1 { return "more than one Host field" }
        guard let host = hosts.first else {
            return head.version.major == 1 && head.version.minor >= 1 ? "an HTTP/1.1 request needs a Host field" : nil
        }
        // An authority: host (name, IPv4, [IPv6]) and port; no blanks, paths, queries or controls.
        let invalid = host.utf8.contains { byte in
            byte <= 0x20 || byte == 0x7F || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?")
                || byte == UInt8(ascii: "#") || byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\"")
        }
        return invalid ? "the Host field is not a valid authority" : nil
    }

    /// The refusal of a body in a coding this server does not decode, or nil: a transfer coding other than
    /// `chunked` (`501`, RFC 9112 §6.1) or a content coding other than `identity` (`415`, RFC 9110 §15.5.16);
    /// read as is, such a body would be taken for what it is not.
    static func unsupportedCoding(_ head: HTTPRequestHead) -> HTTPError? {
        for value in head.headers["transfer-encoding"] {
            for coding in value.split(separator: ",") where !coding.trimmingBlanks.isChunked {
                return HTTPError(.notImplemented, "transfer coding '\(coding.trimmingBlanks)' is not supported; send chunked")
            }
        }
        for value in head.headers["content-encoding"] {
            for coding in value.split(separator: ",") {
                let name = coding.trimmingBlanks.lowercased()
                if !name.isEmpty, name != "identity" {
                    return HTTPError(.unsupportedMediaType, "content coding '\(name)' is not supported; send the body uncompressed")
                }
            }
        }
        return nil
    }

    // MARK: Head conversion

    /// The size of a request head as the header limit counts it.
    static func headSize(_ head: HTTPRequestHead) -> Int {
        var size = head.uri.utf8.count
        for (name, value) in head.headers { size += name.utf8.count + value.utf8.count + 4 }
        return size
    }

    /// Converts a NIOHTTP1 head to an `HTTPRequest`; `nil` when it is malformed.
    static func makeRequest(_ head: HTTPRequestHead) -> HTTPRequest? {
        guard let method = HTTPRequest.Method(head.method.rawValue) else { return nil }
        var fields = HTTPFields()
        fields.reserveCapacity(head.headers.count)
        var authority: String?
        for (name, value) in head.headers {
            guard let fieldName = HTTPField.Name(name) else { return nil }
            if fieldName.canonicalName == "host" {
                authority = value
                continue
            }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        if let absolute = AbsoluteTarget(head.uri) {
            // A request target in absolute form names the authority itself; Host is ignored (RFC 9112 §3.2.2).
            return HTTPRequest(
                method: method, scheme: absolute.scheme, authority: absolute.authority, path: absolute.path,
                headerFields: fields)
        }
        return HTTPRequest(method: method, scheme: nil, authority: authority, path: head.uri, headerFields: fields)
    }

    /// A request target in absolute form (`http://host:port/path?query`): its scheme, authority, and the path with
    /// the query (`/` when the target has none).
    struct AbsoluteTarget: Equatable {
        var scheme: String
        var authority: String
        var path: String

        init?(_ target: String) {
            let bytes = target.utf8
            guard bytes.first != UInt8(ascii: "/"), let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            let scheme = target[..<colon].lowercased()
            guard scheme == "http" || scheme == "https", target[colon...].hasPrefix("://") else { return nil }
            let rest = target[target.utf8.index(colon, offsetBy: 3)...]
            let end = rest.utf8.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
            let authority = rest[..<end]
            guard !authority.isEmpty else { return nil }
            let path = rest[end...]
            self.scheme = scheme
            self.authority = String(authority)
            self.path = path.first == "/" ? String(path) : "/" + path
        }
    }
}

/// Starts the handler side of a streaming body: a task for `.stream`, a plain call for `.detachedStream`.
/// Shared by the HTTP/1.1 and HTTP/2 connection handlers; `writer` ends when the task's closure returns or throws.
func startStreamingBody(_ body: HTTPServerResponse.Body, writer: any HTTPResponseBodyWriter) {
    switch body {
    case .stream(let write):
        Task {
            do {
                try await write(writer)
                writer.finish()
            } catch {
                writer.fail()
            }
        }
    case .detachedStream(let start):
        start(writer)
    case .empty, .bytes:
        writer.finish()
    }
}

extension Substring {
    /// Without spaces and tabs at either end.
    fileprivate var trimmingBlanks: Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }

    /// Whether this transfer coding is `chunked`, in any case.
    fileprivate var isChunked: Bool { lowercased() == "chunked" }
}
