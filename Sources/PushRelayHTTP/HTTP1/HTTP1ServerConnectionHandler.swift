import HTTPTypes
import Logging
import NIOCore
import PushRelayWire

/// Serves HTTP/1.1 on one connection: keep-alive, chunked streaming responses, the routes' body limits, and
/// `Upgrade: h2c` to HTTP/2 on the first request. ``HTTP1RequestParser`` reads requests from the connection's bytes
/// (straight into the `HTTPRequest` the routes read); responses are written as bytes (``HTTP1ResponseEncoding``).
///
/// One request is served at a time. Bytes of requests a client pipelines behind the one being answered stay unparsed
/// in the parser and are served, in order, when its response has ended; while some wait the connection is not read
/// (the socket's buffer and TCP hold the rest). A connection with nothing waiting keeps reading: a request in flight
/// does not un-arm and re-arm the socket's read interest, which NIO's `HTTPServerPipelineHandler` did for every
/// request (two `epoll_ctl` calls).
final class HTTP1ServerConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = Never
    typealias OutboundOut = ByteBuffer

    private enum State {
        case idle
        case collecting(HTTPHandler)
        case streamingBody(RequestBodyStream)
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
    private var admission: (any AnyObject & Sendable)?
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
    /// The connection's input: parsed as far as requests are served, the rest waits (pipelined requests).
    private var parser: HTTP1RequestParser
    /// ``serveInput()`` is running (a response it starts can end at once and call it again).
    private var servingInput = false
    /// A `read` was held back because pipelined input waits.
    private var readHeld = false
    /// The idle deadline between requests (the next head must be complete by then) and the body deadline.
    private var timer: ConnectionTimer?

    init(shared: HTTPServerShared) {
        self.shared = shared
        self.parser = HTTP1RequestParser(maxHeadBytes: Self.parserHeadLimit(shared))
    }

    /// The handlers that serve HTTP/1.1 on a connection, in pipeline order (this one: it parses its own input).
    static func pipeline(shared: HTTPServerShared) -> [any ChannelHandler] {
        [HTTP1ServerConnectionHandler(shared: shared)]
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

    /// Reads stop while pipelined input waits, and while the channel cannot take more output (a client that
    /// pipelines requests without reading their answers would otherwise have them queue in memory without bound);
    /// they resume when the input has been served and the channel is writable again.
    func read(context: ChannelHandlerContext) {
        if holdsInput || !context.channel.isWritable {
            readHeld = true
        } else {
            context.read()
        }
    }

    /// The current request has been read whole and is being answered: input arriving now is pipelined.
    private var isAnswering: Bool {
        guard requestEnded else { return false }
        if case .idle = state { return false }
        return true
    }

    /// Whether input waits behind the request being answered.
    private var holdsInput: Bool { isAnswering && parser.hasUnreadInput }

    /// Serves the input in order until a request is being answered (or more input is needed), then resumes reading
    /// if a read was held back.
    private func serveInput() {
        guard !servingInput else { return }
        servingInput = true
        defer { servingInput = false }
        var served = false
        // The next pipelined request waits while the channel cannot take its answer.
        while !closing, let context, context.channel.isWritable, !isAnswering {
            let part: HTTP1RequestPart?
            do {
                part = try parser.next()
            } catch {
                parserErrorCaught(error)
                break
            }
            guard let part else { break }
            served = true
            receive(part)
        }
        if served { armBodyDeadlineIfIncomplete() }
        guard let context, !closing else { return }
        if inputClosed, case .idle = state {
            // The peer ended its input after the requests served: nothing more can come (what is left is an
            // unfinished head).
            closeOnceWritten(context, last: context.channel.allocator.buffer(capacity: 0))
            return
        }
        if readHeld, !holdsInput, context.channel.isWritable {
            readHeld = false
            context.read()
        }
    }

    /// Writes `last` and closes once everything written has gone out (the peer will send nothing more).
    private func closeOnceWritten(_ context: ChannelHandlerContext, last: ByteBuffer) {
        closing = true
        _ = parser.takeUnread()
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(last)).whenComplete { _ in channel.close(promise: nil) }
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
        if context.channel.isWritable {
            writer?.writable()
            serveInput()  // pipelined requests and reads held while the answers could not go out
        }
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
        // Requests sent whole before the end are answered in turn; the last one's answer closes the connection.
        if !parser.hasUnreadInput { keepAlive = false }
        if closing {
            context.close(promise: nil)  // the end a lingering close waits for
            return
        }
        switch state {
        case .idle:
            context.close(promise: nil)  // an unfinished head will never be finished
        case .collecting where requestEnded:
            fallthrough  // a request read whole whose gate is still checking it counts as one being answered
        case .awaitingResponse:
            // Answered, then closed (endResponse), if the answer comes within the linger time: a client that
            // half-closed reads it; one that closed is gone, and its work is cancelled then (deadlinePassed).
            timer?.set(in: LingeringClose.time)
        case .collecting, .streamingBody, .responding, .upgrading:
            abandonRequest()
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        shared.logger.debug("closing HTTP/1.1 connection", metadata: ["http.error": "\(error)"])
        abandonRequest()
        context.close(promise: nil)
    }

    /// Malformed input: answered when no response has begun, then the connection closes (the parser cannot
    /// resynchronise).
    private func parserErrorCaught(_ parserError: HTTP1ParseError) {
        guard let context else { return }
        shared.logger.debug("closing HTTP/1.1 connection", metadata: ["http.error": "\(parserError)"])
        switch state {
        case .idle, .collecting, .streamingBody, .awaitingResponse:
            // Inside a request (a bad chunk, trailers past the limit) the route is known: its error format.
            let routed: HTTPRequest? =
                switch state {
                case .collecting, .streamingBody: head
                case .idle, .awaitingResponse, .responding, .upgrading: nil
                }
            if case .streamingBody(let continuation) = state {
                continuation.finish(throwing: HTTPTransportError.protocolError("malformed request"))
            }
            state = .awaitingResponse
            requestID += 1
            keepAlive = false
            let error =
                switch parserError.kind {
                case .headTooLarge: HTTPError(.requestHeaderFieldsTooLarge, parserError.reason)
                case .versionNotSupported: HTTPError(.httpVersionNotSupported, parserError.reason)
                case .malformed: HTTPError(.badRequest, "malformed HTTP/1.1 request: \(parserError.reason)")
                }
            respond(HTTPResponder.response(for: error, to: routed, by: shared.responder), requestID: requestID)
        case .responding, .upgrading:
            abandonRequest()
            context.close(promise: nil)
        }
    }

    /// The largest head the parser reads; past it the request is answered 431 unread (a smaller head past the
    /// header-list limit is answered 431 in its route's format).
    static func parserHeadLimit(_ shared: HTTPServerShared) -> Int {
        max(shared.configuration.maxHeaderListSize * 4, 64 * 1024)
    }

    // MARK: Requests

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if closing { return }
        parser.append(unwrapInboundIn(data))
        serveInput()
    }

    private func receive(_ part: HTTP1RequestPart) {
        switch part {
        case .head(let head): receiveHead(head)
        case .body(let buffer): receiveBody(buffer)
        case .end: receiveEnd()
        }
    }

    private func receiveHead(_ parsed: HTTP1RequestHead) {
        // After the peer's end, a request it pipelined before it is answered if it can be within the linger time.
        timer?.set(in: inputClosed ? LingeringClose.time : nil)
        requestEnded = false
        requestCount += 1
        requestID += 1
        receivedBodyBytes = 0
        body = ByteBuffer()
        verifying = false
        endedWhileVerifying = false
        requestIsHTTP10 = parsed.isHTTP10
        keepAlive = parsed.keepAlive && !draining && !(inputClosed && !parser.hasUnreadInput)
        // An HTTP/1.0 message with Transfer-Encoding: its framing is in doubt (an HTTP/1.0 intermediary does not
        // know chunked), so the connection closes after it (RFC 9112 §6.1).
        if requestIsHTTP10, parsed.framing == .chunked { keepAlive = false }
        expectsContinue = false
        let head = parsed.request
        self.head = head
        if parsed.size > shared.configuration.maxHeaderListSize {
            // In the route's error format (and with its CORS headers) when the head names one: 414 when the target
            // alone is past the limit (RFC 9112 §3), 431 when the fields are.
            let tooLong = (head.path?.utf8.count ?? 0) > shared.configuration.maxHeaderListSize
            rejectForRoute(HTTPError(tooLong ? .uriTooLong : .requestHeaderFieldsTooLarge))
            return
        }
        if let problem = parsed.hostProblem {
            rejectForRoute(.init(.badRequest, problem))
            return
        }
        if let refusal = parsed.codingRefusal {
            rejectForRoute(refusal)
            return
        }
        if head.path == "*" {
            // Asterisk form: OPTIONS about the server as a whole (RFC 9110 §9.3.7); no other method may use it.
            guard head.method == .options else {
                reject(.init(.badRequest, "the target * is for OPTIONS only"))
                return
            }
            state = .awaitingResponse
            respond(
                HTTPServerResponse(status: .noContent, headerFields: [.allow: "GET, HEAD, POST, DELETE, OPTIONS"]),
                requestID: requestID)
            return
        }
        // RFC 9110 §7.8: a server MUST ignore Upgrade in an HTTP/1.0 request.
        if requestCount == 1, !requestIsHTTP10, let settings = Self.h2cUpgradeSettings(head.headerFields) {
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
        if case .length(let length) = parsed.framing, length > maxBodyBytes {
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
            let requestBody: HTTPRequestBody
            if parsed.framing != .none {
                let (stream, continuation) = AsyncThrowingStream<ByteBuffer, any Error>.makeStream()
                state = .streamingBody(RequestBodyStream(continuation))
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
            if body.readableBytes == 0 {
                body = buffer  // a body in one read: its slice, not a copy
            } else {
                var buffer = buffer
                body.writeBuffer(&buffer)
            }
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
        _ handler: @Sendable (HTTPServerRequest, ByteBuffer, HTTPResponsePromise) -> Void,
        _ request: HTTPServerRequest,
        _ body: ByteBuffer
    ) {
        guard let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let (requestID, responder, head) = (self.requestID, shared.responder, request.head)
        // The head only (an error's format follows the route): not a copy of the whole request.
        let promise = HTTPResponsePromise(eventLoop: context.eventLoop) { result in
            bound.value.respond(HTTPResponder.response(for: result, to: head, by: responder), requestID: requestID)
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
        _ = parser.takeUnread()
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
            parser.forgetRecentRequest()  // a long response: the connection need not remember this request
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

    /// Writes the response's last bytes; then serves pipelined input waiting in the parser, or, when the connection is not kept alive,
    /// closes it lingering (``LingeringClose``): closing with unread input would reset it.
    private func endResponse(with last: ByteBuffer) {
        guard let context else { return }
        state = .idle
        head = nil
        if keepAlive {
            timer?.set(in: shared.configuration.idleTimeout)
            context.writeAndFlush(wrapOutboundOut(last), promise: nil)
            serveInput()
        } else if inputClosed {
            // Nothing more can come from the peer: no lingering, close once the answer is out.
            closeOnceWritten(context, last: last)
        } else {
            closing = true
            _ = parser.takeUnread()
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
    static func h2cUpgradeSettings(_ fields: HTTPFields) -> [UInt8]? {
        func tokens(_ name: HTTPField.Name) -> [String] {
            fields[values: name].flatMap { $0.split(separator: ",") }.map { $0.trimmingBlanks.lowercased() }
        }
        guard tokens(.upgrade).contains("h2c") else { return nil }
        let connection = tokens(.connection)
        guard connection.contains("upgrade"), connection.contains("http2-settings") else { return nil }
        let settings = fields[values: HTTPField.Name("http2-settings")!]
        // A SETTINGS payload is whole 6-byte settings; another length is not an upgrade to answer with 101.
        guard settings.count == 1, let payload = Base64URL.decode(settings[0]), payload.count % 6 == 0 else { return nil }
        if fields[.transferEncoding] != nil { return nil }
        if let length = fields[.contentLength], length != "0" { return nil }
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
        // The bytes already read past the request (a preface sent in the same write as the upgrade request) go to
        // the HTTP/2 handler as a read of their own, ended at once: else it holds its answers until the next socket
        // read.
        let rest = parser.takeUnread()
        do {
            try pipeline.addHandler(http2, position: .after(self))
            if rest.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(rest)) }
            context.fireChannelReadComplete()
            pipeline.removeHandler(context: context, promise: nil)
        } catch {
            shared.logger.debug("h2c upgrade failed", metadata: ["http.error": "\(error)"])
            context.close(promise: nil)
        }
    }

    // MARK: Head checks

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
}
