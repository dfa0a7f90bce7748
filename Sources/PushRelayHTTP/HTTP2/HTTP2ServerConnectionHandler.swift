import HTTPTypes
import Logging
import NIOCore

/// The h2c upgrade that started a connection: the `HTTP2-Settings` payload and the request (stream 1).
struct HTTP2UpgradeRequest {
    var settingsPayload: [UInt8]
    var head: HTTPRequest
}

/// Serves one HTTP/2 connection: one nghttp2 session, streams as values in a table, handlers routed by the
/// server's responder.
///
/// Bytes read go to nghttp2 at once; what nghttp2 wants to send is collected once per read batch
/// (`channelReadComplete`) or once per event-loop tick after application writes, and written as one buffer.
/// While the channel is not writable the handler neither produces output nor reads from the socket.
final class HTTP2ServerConnectionHandler: ChannelDuplexHandler, NGHTTP2SessionDelegate {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = Never
    typealias OutboundOut = ByteBuffer

    private let shared: HTTPServerShared
    private var upgrade: HTTP2UpgradeRequest?
    private var session: NGHTTP2Session?
    private var streams: [Int32: HTTP2ServerStream] = [:]
    private var context: ChannelHandlerContext?
    private var remoteAddress: SocketAddress?
    private var inReadBatch = false
    private var flushScheduled = false
    private var readPending = false
    private var draining = false
    private var closing = false
    /// The idle deadline while no stream is open, else the earliest deadline of a request still arriving.
    private var timer: ConnectionTimer?
    private var controlFrames: HTTP2ControlFrameBudget
    /// Request-body bytes this connection's streams hold (their windows reopened), and the streams whose received
    /// bytes wait for room before their windows are reopened, oldest first.
    private var heldBodyBytes = 0
    private var streamsAwaitingWindow: [Int32] = []
    /// The regular fields of the connection's last request head: a field line equal to the one at the same place
    /// reuses it (``HTTP2ServerStream/addHeader(name:value:limit:recent:)``). Forgotten when a stream turns to a long
    /// response (a device's event stream), so that an idle connection keeps nothing more.
    private var recentFields = HTTPFields()
    /// The stream whose request head is arriving, and its id: header blocks do not interleave (RFC 9113 §4.3), so each
    /// field goes to it without a look-up in ``streams``. Cleared when the block completes or the stream closes.
    private var receivingHead: (id: Int32, stream: HTTP2ServerStream)?
    /// `shared.configuration.maxHeaderListSize`, read once for every field of every head.
    private let maxHeaderListSize: Int

    init(shared: HTTPServerShared, upgrade: HTTP2UpgradeRequest? = nil) {
        self.shared = shared
        self.upgrade = upgrade
        self.maxHeaderListSize = shared.configuration.maxHeaderListSize
        self.controlFrames = HTTP2ControlFrameBudget(
            burst: shared.configuration.controlFrameBurst, ratePerSecond: shared.configuration.controlFrameRatePerSecond)
    }

    /// Bytes buffered in this connection's streaming writers (test hook).
    var bufferedStreamBytes: Int {
        streams.values.reduce(0) { $0 + ($1.writer?.bufferedBytes ?? 0) + $1.outbound.readableBytes }
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        remoteAddress = context.channel.remoteAddress
        let session = NGHTTP2Session(
            role: .server,
            limits: shared.configuration.sessionLimits,
            delegate: self,
            allocator: context.channel.allocator
        )
        self.session = session
        let timer = ConnectionTimer(eventLoop: context.eventLoop) { [weak self] in self?.deadlinePassed() }
        timer.set(in: shared.configuration.idleTimeout)
        self.timer = timer
        if let upgrade {
            self.upgrade = nil
            guard session.upgradeServer(settingsPayload: upgrade.settingsPayload, isHeadRequest: upgrade.head.method == .head)
            else {
                context.close(promise: nil)
                return
            }
            let stream = HTTP2ServerStream()
            streams[1] = stream
            startRequest(stream, streamID: 1, head: upgrade.head, endStream: true)
        }
        if context.channel.isActive { flushOutput() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        closeAllStreams()
        shared.bodyBudget.cancelWait(ObjectIdentifier(self))
        timer?.cancel()
        timer = nil
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        flushOutput()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing = true
        closeAllStreams()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let session, !closing else { return }
        inReadBatch = true
        do {
            try session.receive(unwrapInboundIn(data))
        } catch {
            inReadBatch = false
            shared.logger.debug(
                "closing HTTP/2 connection",
                metadata: ["http.error": "\(error)", "http.remote": "\(remoteAddress.map { "\($0)" } ?? "?")"])
            if error.isPeerExcess { session.submitGoAway(errorCode: HTTP2ErrorCode.enhanceYourCalm) }
            flushOutput()
            closeConnection()
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        inReadBatch = false
        flushOutput()
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if context.channel.isWritable || closing {
            context.read()
        } else {
            readPending = true
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            flushOutput()
            if readPending {
                readPending = false
                context.read()
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? HTTPServerConnectionEvent, case .drain = event {
            beginDrain()
        } else if let event = event as? ChannelEvent, event == .inputClosed {
            // An HTTP/2 peer ends with GOAWAY; a bare end of its input (also the end a lingering close waits for)
            // leaves nothing to read frames from: the connection closes, as it did before half-closure was allowed.
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        shared.logger.debug("HTTP/2 connection error", metadata: ["http.error": "\(error)"])
        closeConnection()
    }

    // MARK: Output

    /// Collects everything nghttp2 wants to send and writes it as few buffers, then flushes.
    func flushOutput() {
        guard let context, let session, !closing, context.channel.isActive else { return }
        do {
            try session.writeOutput(to: context)
        } catch {
            shared.logger.debug("HTTP/2 send failed", metadata: ["http.error": "\(error)"])
            closeConnection()
            return
        }
        if !session.isAlive { closeConnection() }
    }

    /// Flushes at the end of the current read batch, or on the next event-loop tick.
    private func scheduleFlush() {
        guard !inReadBatch, !flushScheduled, let context else { return }
        flushScheduled = true
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            bound.value.flushScheduled = false
            bound.value.flushOutput()
        }
    }

    /// Closes after what is queued has gone out, lingering (``LingeringClose``): the peer reads every answer, the
    /// final GOAWAY, then the end.
    private func closeConnection() {
        guard !closing, let context else { return }
        closing = true
        LingeringClose.start(context, timer: timer)
        if readPending {
            readPending = false
            context.read()  // reads held back for a full output buffer resume: the peer's bytes are dropped now
        }
    }

    private func closeAllStreams() {
        let open = streams
        streams = [:]
        receivingHead = nil
        for (streamID, stream) in open {
            releaseBody(stream, streamID: streamID, retry: false)
            Self.abandon(stream)
        }
    }

    private static func abandon(_ stream: HTTP2ServerStream) {
        stream.handlerTask?.cancel()
        stream.handlerTask = nil
        stream.writer?.close()
        if case .streamingBody(let continuation) = stream.phase {
            continuation.finish(throwing: HTTPTransportError.streamClosed())
        }
    }

    // MARK: Deadlines

    /// The timer fired: with no stream open the connection has been idle too long (GOAWAY and close, whatever
    /// PINGs it sent); otherwise every stream whose request has not arrived whole by its deadline is reset, and so is
    /// every stream whose fixed answer waited a whole `requestTimeout` for the peer's flow-control window without a
    /// byte going out (checked every `requestTimeout` while requests are handled or answers wait, so such an answer
    /// is dropped one to two timeouts after it stalled), and every early-answered stream whose client neither ended
    /// its request nor sent more of it by the request's deadline (with NO_ERROR: its answer is complete).
    private func deadlinePassed() {
        if closing {
            context?.close(promise: nil)  // the linger time has passed
            return
        }
        guard let session else { return }
        if streams.isEmpty {
            shared.logger.debug("closing HTTP/2 connection: no stream within the idle timeout")
            session.submitGoAway()
            flushOutput()
            closeConnection()
            return
        }
        let now = NIODeadline.now()
        var next: NIODeadline?
        for (streamID, stream) in streams {
            if stream.answeredEarly {
                // Answered, and the client neither ended its request nor sent more of it.
                guard let deadline = stream.requestDeadline else { continue }
                if deadline <= now {
                    stream.requestDeadline = nil
                    session.resetStream(streamID: streamID, errorCode: HTTP2ErrorCode.noError)
                } else if next.map({ deadline < $0 }) ?? true {
                    next = deadline
                }
                continue
            }
            guard stream.isReceivingRequest else {
                guard let deadline = watchResponse(stream, streamID: streamID, now: now, session: session) else { continue }
                if next.map({ deadline < $0 }) ?? true { next = deadline }
                continue
            }
            guard let deadline = stream.requestDeadline else { continue }
            if deadline <= now {
                stream.requestDeadline = nil
                if case .streamingBody(let continuation) = stream.phase {
                    continuation.finish(throwing: HTTPTransportError.timeout("request body not received in time"))
                }
                stream.phase = .awaitingResponse
                stream.body = ByteBuffer()
                session.resetStream(streamID: streamID, errorCode: HTTP2ErrorCode.cancel)
            } else if next.map({ deadline < $0 }) ?? true {
                next = deadline
            }
        }
        timer?.set(next)
        flushOutput()
    }

    /// The response side of ``deadlinePassed()`` for one stream whose request has arrived: its next check, or nil
    /// when it needs none (a streamed answer, bounded by its writer's watermark; an answer handed over whole; no
    /// `requestTimeout`). A fixed answer that sent nothing since the last check, a whole timeout ago, is reset.
    private func watchResponse(
        _ stream: HTTP2ServerStream, streamID: Int32, now: NIODeadline, session: NGHTTP2Session
    ) -> NIODeadline? {
        guard let timeout = shared.configuration.requestTimeout, stream.writer == nil else { return nil }
        let waitsForWindow: Bool
        switch stream.phase {
        case .awaitingResponse: waitsForWindow = false
        case .responding where stream.outbound.readableBytes > 0: waitsForWindow = true
        default: return nil
        }
        if waitsForWindow, !stream.sentSinceCheck, let deadline = stream.responseDeadline, deadline <= now {
            shared.logger.debug("resetting an HTTP/2 stream: its answer made no progress within the request timeout")
            stream.responseDeadline = nil
            stream.outbound = ByteBuffer()
            session.resetStream(streamID: streamID, errorCode: HTTP2ErrorCode.cancel)
            return nil
        }
        stream.sentSinceCheck = false
        let deadline = now + timeout
        stream.responseDeadline = deadline
        return deadline
    }

    // MARK: Graceful shutdown

    private func beginDrain() {
        guard !draining, let context, let session else { return }
        draining = true
        session.submitShutdownNotice()
        flushOutput()
        for stream in streams.values { stream.writer?.drain() }
        // The final GOAWAY follows after about one round trip, so streams the client opened meanwhile are served.
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .milliseconds(100)) {
            guard let session = bound.value.session else { return }
            session.submitGoAway()
            bound.value.flushOutput()
        }
    }

    // MARK: Called by streaming writers

    /// A streaming writer queued bytes (or its end).
    func streamHasOutput(_ streamID: Int32) {
        guard streams[streamID] != nil, let session else { return }
        session.resumeData(streamID: streamID)
        scheduleFlush()
    }

    /// A streaming handler failed: reset its stream.
    func resetStream(_ streamID: Int32) {
        guard streams[streamID] != nil, let session else { return }
        session.resetStream(streamID: streamID, errorCode: HTTP2ErrorCode.internalError)
        scheduleFlush()
    }

    // MARK: NGHTTP2SessionDelegate

    func sessionBeginHeaders(streamID: Int32) {
        let stream = HTTP2ServerStream()
        if let requestTimeout = shared.configuration.requestTimeout, let timer {
            let deadline = NIODeadline.now() + requestTimeout
            stream.requestDeadline = deadline
            if streams.isEmpty || timer.deadline.map({ deadline < $0 }) ?? true { timer.set(deadline) }
        } else if streams.isEmpty {
            timer?.set(nil)
        }
        streams[streamID] = stream
        receivingHead = (streamID, stream)
        controlFrames.earn()
    }

    /// The stream of an arriving field: the one whose head is being received, else (never, with a conforming nghttp2)
    /// the look-up.
    private func receivingStream(_ streamID: Int32) -> HTTP2ServerStream? {
        if let receivingHead, receivingHead.id == streamID { return receivingHead.stream }
        return streams[streamID]
    }

    func sessionHeaderListTooLarge(streamID: Int32) {
        streams[streamID]?.headerTooLarge = true
    }

    func sessionControlFrame() -> Bool {
        if controlFrames.spend() { return true }
        shared.logger.debug(
            "closing HTTP/2 connection: control frame flood",
            metadata: ["http.remote": "\(remoteAddress.map { "\($0)" } ?? "?")"])
        session?.submitGoAway(errorCode: HTTP2ErrorCode.enhanceYourCalm)
        return false
    }

    func sessionHeader(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        receivingStream(streamID)?.addHeader(name: name, value: value, limit: maxHeaderListSize, recent: recentFields)
    }

    func sessionPseudoHeader(streamID: Int32, name: NGHTTP2PseudoHeader, value: String) {
        receivingStream(streamID)?.addPseudoHeader(name, value: value, limit: maxHeaderListSize)
    }

    func sessionHeadersComplete(streamID: Int32, endStream: Bool) {
        let stream = receivingStream(streamID)
        if receivingHead?.id == streamID { receivingHead = nil }
        guard let stream, case .headers = stream.phase else { return }
        if stream.headerTooLarge {
            // In the route's error format (and with its CORS headers) when the fields kept so far name one.
            stream.phase = .awaitingResponse
            let response = HTTPResponder.response(
                for: HTTPError(.requestHeaderFieldsTooLarge), to: stream.makeHead(), by: shared.responder)
            respond(stream, streamID: streamID, response: response)
            return
        }
        guard let head = stream.makeHead() else {
            session?.resetStream(streamID: streamID, errorCode: HTTP2ErrorCode.protocolError)
            return
        }
        recentFields = head.headerFields
        startRequest(stream, streamID: streamID, head: head, endStream: endStream)
    }

    func sessionTrailersComplete(streamID: Int32) {
        sessionEndStream(streamID: streamID)
    }

    func sessionData(streamID: Int32, chunk: borrowing NGHTTP2DataChunk) {
        guard let stream = streams[streamID] else {
            session?.consumeStreamAndConnection(streamID: streamID, count: chunk.count)
            return
        }
        if stream.answeredEarly {
            session?.consumeStreamAndConnection(streamID: streamID, count: chunk.count)
            resetAnsweredEarly(stream, streamID: streamID)
            return
        }
        stream.receivedBodyBytes += chunk.count
        if stream.receivedBodyBytes > stream.maxBodyBytes {
            session?.consumeStreamAndConnection(streamID: streamID, count: chunk.count)
            bodyTooLarge(stream, streamID: streamID)
            return
        }
        switch stream.phase {
        case .collecting:
            chunk.write(into: &stream.body)
        case .streamingBody(let continuation):
            guard let context else { return }
            var buffer = context.channel.allocator.buffer(capacity: chunk.count)
            chunk.write(into: &buffer)
            continuation.yield(buffer)
        case .headers, .awaitingResponse, .responding:
            // Not wanted: the window reopens at once.
            session?.consumeStreamAndConnection(streamID: streamID, count: chunk.count)
            return
        }
        stream.unconsumedBodyBytes += chunk.count
        if streamsAwaitingWindow.isEmpty {
            if !reopenWindow(stream, streamID: streamID) { streamsAwaitingWindow.append(streamID) }
        } else if !streamsAwaitingWindow.contains(streamID) {
            streamsAwaitingWindow.append(streamID)  // behind the streams already waiting
        }
    }

    // MARK: Flow control: windows reopened as the body budget allows

    /// Reopens the stream's window for its received bytes as far as the connection's and the server's budgets take
    /// them; false if some wait (the peer's window stays closed for them until bytes are given back).
    private func reopenWindow(_ stream: HTTP2ServerStream, streamID: Int32) -> Bool {
        let pending = stream.unconsumedBodyBytes
        guard pending > 0 else { return true }
        // Past the connection's bound only a stream that is its connection's sole holder goes on (one body larger
        // than the bound must still arrive); others take what is left of it.
        var count = pending
        if heldBodyBytes > stream.heldBodyBytes {
            count = min(count, shared.configuration.maxBufferedBodyBytesPerConnection - heldBodyBytes)
            guard count > 0 else { return false }
        }
        guard let context else { return false }
        let eventLoop = context.eventLoop
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        let granted = shared.bodyBudget.acquire(upTo: count, held: stream.heldBodyBytes, waiter: ObjectIdentifier(self)) {
            eventLoop.execute { bound.value.reopenWaitingWindows() }
        }
        guard granted > 0 else { return false }
        stream.unconsumedBodyBytes -= granted
        stream.heldBodyBytes += granted
        heldBodyBytes += granted
        session?.consumeStreamAndConnection(streamID: streamID, count: granted)
        // The WINDOW_UPDATEs go out at the end of the read batch or on the next tick, never from here: this may run
        // inside an nghttp2 callback (a stream closing while nghttp2 sends), where sending again is not allowed.
        scheduleFlush()
        return granted == pending
    }

    /// Reopens the windows of waiting streams, oldest first, as far as the budgets allow.
    private func reopenWaitingWindows() {
        while let streamID = streamsAwaitingWindow.first {
            if let stream = streams[streamID] {
                guard reopenWindow(stream, streamID: streamID) else { break }
            }
            streamsAwaitingWindow.removeFirst()
        }
    }

    /// Gives a request's body bytes back (it was answered, or its stream closed): its unconsumed bytes reopen the
    /// connection's window, its held bytes return to the budgets, and waiting streams may go on.
    private func releaseBody(_ stream: HTTP2ServerStream, streamID: Int32, retry: Bool = true) {
        if stream.unconsumedBodyBytes > 0 {
            session?.consumeStreamAndConnection(streamID: streamID, count: stream.unconsumedBodyBytes)
            stream.unconsumedBodyBytes = 0
        }
        guard stream.heldBodyBytes > 0 else { return }
        heldBodyBytes -= stream.heldBodyBytes
        shared.bodyBudget.release(stream.heldBodyBytes)
        stream.heldBodyBytes = 0
        if retry { reopenWaitingWindows() }
    }

    func sessionEndStream(streamID: Int32) {
        guard let stream = streams[streamID] else { return }
        switch stream.phase {
        case .collecting(let handler):
            if stream.verifying {
                stream.endedWhileVerifying = true
                return
            }
            stream.phase = .awaitingResponse
            runCollected(stream, streamID: streamID, handler)
        case .streamingBody(let continuation):
            stream.phase = .awaitingResponse
            continuation.finish()
        case .headers, .awaitingResponse, .responding:
            break
        }
    }

    func sessionStreamClosed(streamID: Int32, errorCode: UInt32) {
        if receivingHead?.id == streamID { receivingHead = nil }
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        releaseBody(stream, streamID: streamID)
        Self.abandon(stream)
        if streams.isEmpty { timer?.set(in: shared.configuration.idleTimeout) }
    }

    func sessionGoAway(lastStreamID: Int32, errorCode: UInt32) {}

    func sessionSentEndStreamBeforePeer(streamID: Int32) {
        // The response is complete but the client has not ended its request. The rest of its body is not wanted
        // (RFC 9113 §8.1), but the stream is reset only from a client that is sending it (some arrived, before the
        // answer or after it: resetAnsweredEarly). A client that held its body back (`expect: 100-continue`, which
        // curl sends for large bodies) ends the stream itself once it has read the answer, and curl 7.88 (Debian
        // 12's) fails a response whose RST_STREAM it reads in the same read as the response's end, NO_ERROR or not
        // ("Empty reply from server"): a reset on a timer after every early answer lost that race on a loaded
        // machine. A client that neither sends nor ends is reset when its request's deadline passes
        // (deadlinePassed).
        guard let stream = streams[streamID] else { return }
        stream.answeredEarly = true
        if stream.receivedBodyBytes > 0 {
            resetAnsweredEarly(stream, streamID: streamID)
            return
        }
        if let deadline = stream.requestDeadline, let timer, timer.deadline.map({ deadline < $0 }) ?? true {
            timer.set(deadline)
        }
    }

    /// An early-answered request's body is arriving: its stream is reset with NO_ERROR a moment later - not at
    /// once, so that the reset does not reach the client in the same read as the answer's end (see
    /// ``sessionSentEndStreamBeforePeer(streamID:)``). A client that ends its upload meanwhile closes the stream,
    /// and no reset is sent.
    private func resetAnsweredEarly(_ stream: HTTP2ServerStream, streamID: Int32) {
        guard !stream.earlyResetScheduled, let context else { return }
        stream.earlyResetScheduled = true
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: Self.earlyResponseResetDelay) {
            let handler = bound.value
            guard handler.streams[streamID] != nil, let session = handler.session else { return }
            session.resetStream(streamID: streamID, errorCode: HTTP2ErrorCode.noError)
            handler.flushOutput()
        }
    }

    /// How long after more of an early-answered request's body arrived its stream is reset
    /// (``resetAnsweredEarly(_:streamID:)``).
    static let earlyResponseResetDelay = TimeAmount.milliseconds(50)

    func sessionReadBody(streamID: Int32, maxLength: Int) -> NGHTTP2BodyChunk {
        guard let stream = streams[streamID] else { return .bytes(ByteBuffer(), endStream: true) }
        if let writer = stream.writer { return writer.read(maxLength: maxLength) }
        let count = min(maxLength, stream.outbound.readableBytes)
        let chunk = stream.outbound.readSlice(length: count)!
        stream.sentSinceCheck = true
        return .bytes(chunk, endStream: stream.outbound.readableBytes == 0)
    }

    // MARK: Requests

    private func startRequest(_ stream: HTTP2ServerStream, streamID: Int32, head: HTTPRequest, endStream: Bool) {
        let match = shared.responder.route(for: head)
        guard case .matched(let handler, let maxBodyBytes, let pathParameters, let gate) = match else {
            stream.phase = .awaitingResponse
            respond(stream, streamID: streamID, response: HTTPResponder.response(forUnmatched: match, to: head, by: shared.responder)!)
            return
        }
        if let gate {
            switch gate(head) {
            case .allow:
                break
            case .admit(let value):
                stream.admission = value
            case .deny(let response):
                // The body is not read: DATA for this stream is dropped, and once the answer has ended the rest of
                // the stream is reset (sessionSentEndStreamBeforePeer).
                stream.phase = .awaitingResponse
                respond(stream, streamID: streamID, response: response)
                return
            case .verify(let check):
                verify(stream, streamID: streamID, check)
            }
        }
        stream.head = head
        if !endStream, let length = stream.contentLength, length > maxBodyBytes {
            bodyTooLarge(stream, streamID: streamID)
            return
        }
        stream.pathParameters = pathParameters
        stream.maxBodyBytes = maxBodyBytes
        // Invited at once, or once the gate's check allowed the request (a refused one is answered unread).
        stream.expectsContinue = !endStream && head.headerFields[.expect]?.lowercased() == "100-continue"
        if !stream.verifying { sendContinueIfExpected(stream, streamID: streamID) }
        switch handler {
        case .immediate, .collected, .promised:
            if endStream && !stream.verifying {
                stream.phase = .awaitingResponse
                runCollected(stream, streamID: streamID, handler)
            } else {
                stream.phase = .collecting(handler)
                stream.endedWhileVerifying = endStream
            }
        case .async(let handler):
            let body: HTTPRequestBody
            if endStream {
                stream.phase = .awaitingResponse
                body = .empty
            } else {
                let (bodyStream, continuation) = AsyncThrowingStream<ByteBuffer, any Error>.makeStream()
                stream.phase = .streamingBody(RequestBodyStream(continuation))
                body = HTTPRequestBody(stream: bodyStream)
            }
            let request = HTTPServerRequest(
                head: head, body: body, pathParameters: pathParameters, remoteAddress: remoteAddress,
                protocolVersion: .http2, admission: stream.admission)
            runAsync(streamID: streamID, handler, request)
        }
    }

    /// Starts the gate's check off the event loop; its verdict comes back here (``verified(streamID:response:)``).
    private func verify(_ stream: HTTP2ServerStream, streamID: Int32, _ check: @escaping @Sendable () async -> HTTPServerResponse?) {
        guard let context else { return }
        stream.verifying = true
        let eventLoop = context.eventLoop
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        Task {
            let response = await check()
            eventLoop.execute { bound.value.verified(streamID: streamID, response: response) }
        }
    }

    /// The gate's verdict on a stream that may have ended or gone meanwhile: a response answers it and drops the
    /// body; nil runs the handler if the body is whole (else when it is).
    private func verified(streamID: Int32, response: HTTPServerResponse?) {
        guard let stream = streams[streamID], stream.verifying else { return }
        stream.verifying = false
        if let response {
            stream.body = ByteBuffer()
            if case .collecting = stream.phase { stream.phase = .awaitingResponse }
            respond(stream, streamID: streamID, response: response)
            return
        }
        if stream.endedWhileVerifying, case .collecting(let handler) = stream.phase {
            stream.phase = .awaitingResponse
            runCollected(stream, streamID: streamID, handler)
        } else {
            sendContinueIfExpected(stream, streamID: streamID)
        }
    }

    /// Sends `100 Continue` (an informational HEADERS frame) if the stream's client waits for one before its body.
    private func sendContinueIfExpected(_ stream: HTTP2ServerStream, streamID: Int32) {
        guard stream.expectsContinue, let session else { return }
        stream.expectsContinue = false
        session.submitInformational(streamID: streamID, status: 100)
        scheduleFlush()
    }

    /// Runs an `.immediate` handler here, or starts a `.collected` one, with the body collected so far.
    private func runCollected(_ stream: HTTP2ServerStream, streamID: Int32, _ handler: HTTPHandler) {
        guard let head = stream.head else { return }
        let body = stream.body
        stream.body = ByteBuffer()
        let request = HTTPServerRequest(
            head: head, body: HTTPRequestBody(body), pathParameters: stream.pathParameters,
            remoteAddress: remoteAddress, protocolVersion: .http2, admission: stream.admission)
        switch handler {
        case .immediate(let handler):
            respond(stream, streamID: streamID, response: handler(request, body))
        case .promised(let handler):
            guard let context else { return }
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            let responder = shared.responder
            let promise = HTTPResponsePromise(eventLoop: context.eventLoop) { result in
                bound.value.respond(streamID: streamID, response: HTTPResponder.response(for: result, to: head, by: responder))
            }
            handler(request, body, promise)
        case .collected(let handler), .async(let handler):
            runAsync(streamID: streamID, handler, request)
        }
    }

    private func runAsync(
        streamID: Int32,
        _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse,
        _ request: HTTPServerRequest
    ) {
        guard let context else { return }
        let eventLoop = context.eventLoop
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        let responder = shared.responder
        streams[streamID]?.handlerTask = Task {
            let response = await HTTPResponder.run(handler, request, responder: responder)
            eventLoop.execute { bound.value.respond(streamID: streamID, response: response) }
        }
    }

    private func bodyTooLarge(_ stream: HTTP2ServerStream, streamID: Int32) {
        switch stream.phase {
        case .streamingBody(let continuation):
            stream.phase = .awaitingResponse
            continuation.finish(throwing: HTTPError.payloadTooLarge)
        case .collecting, .headers:
            stream.phase = .awaitingResponse
            stream.body = ByteBuffer()
        case .awaitingResponse, .responding:
            return
        }
        // Once the 413 is out, `sessionSentEndStreamBeforePeer` stops the rest of the upload.
        respond(
            stream, streamID: streamID,
            response: HTTPResponder.response(for: HTTPError.payloadTooLarge, to: stream.head, by: shared.responder))
    }

    /// Submits an async handler's answer, if its stream is still open.
    private func respond(streamID: Int32, response: HTTPServerResponse) {
        guard let stream = streams[streamID] else { return }
        respond(stream, streamID: streamID, response: response)
    }

    /// Submits a handler's answer.
    private func respond(_ stream: HTTP2ServerStream, streamID: Int32, response: HTTPServerResponse) {
        guard let session, let context else { return }
        switch stream.phase {
        case .responding:
            return
        case .streamingBody(let continuation):
            // The handler answered before reading the whole body; the rest is discarded.
            continuation.finish()
        case .headers, .collecting, .awaitingResponse:
            break
        }
        stream.phase = .responding
        // The handler is done: its finished task's memory should not live as long as a streamed answer, and the
        // request's body bytes go back to the budgets.
        stream.handlerTask = nil
        releaseBody(stream, streamID: streamID)
        let isHead = stream.head?.method == .head
        let status = response.head.status.code
        switch response.body {
        case .empty:
            let length: Int? = (status == 204 || status == 304 || status < 200) ? nil : 0
            session.submitResponse(
                streamID: streamID, status: status, headerFields: response.head.headerFields, contentLength: length,
                hasBody: false)
        case .bytes(let bytes):
            stream.outbound = isHead ? ByteBuffer() : bytes
            stream.responseDeadline = nil  // the stall clock starts at the next check, not at the request's
            session.submitResponse(
                streamID: streamID, status: status, headerFields: response.head.headerFields,
                contentLength: bytes.readableBytes, hasBody: !isHead && bytes.readableBytes > 0)
        case .stream, .detachedStream:
            recentFields = HTTPFields()
            let writer = HTTP2StreamBodyWriter(
                streamID: streamID, connection: self, eventLoop: context.eventLoop,
                allocator: context.channel.allocator, highWatermark: shared.configuration.streamWriteHighWatermark)
            if draining { writer.drain() }
            stream.writer = writer
            session.submitResponse(
                streamID: streamID, status: status, headerFields: response.head.headerFields, contentLength: nil,
                hasBody: !isHead)
            if isHead {
                writer.finish()
            } else {
                startStreamingBody(response.body, writer: writer)
            }
        }
        scheduleFlush()
    }
}
