import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PushRelayTLS

/// The client side of one HTTP/2 connection on nghttp2: requests become streams in a table, responses are handed
/// to the waiting `execute` call, bodies are queued per stream until the application reads them.
final class HTTP2ClientConnectionHandler: ChannelDuplexHandler, NGHTTP2SessionDelegate {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = Never
    typealias OutboundOut = ByteBuffer

    private let limits: NGHTTP2SessionLimits
    private let waitForTLS: Bool
    private let logger: Logger
    /// Succeeds when the connection can carry requests (after the TLS handshake chose `h2`, if TLS is used).
    let ready: EventLoopPromise<Void>
    private var session: NGHTTP2Session?
    private var context: ChannelHandlerContext?
    private var streams: [Int32: HTTP2ClientStream] = [:]
    private var isReady = false
    private var inReadBatch = false
    private var flushScheduled = false
    private var readPending = false
    private var closedError: (any Error)?
    /// Set once a control frame of the server was read (its SETTINGS come first): the server speaks HTTP/2,
    /// whatever happens to a request later. Read from other threads (``HTTP2Client/serverSpokeHTTP2``).
    let heardHTTP2 = NIOLockedValueBox(false)
    private var sawControlFrame = false

    init(limits: NGHTTP2SessionLimits, waitForTLS: Bool, ready: EventLoopPromise<Void>, logger: Logger) {
        self.limits = limits
        self.waitForTLS = waitForTLS
        self.ready = ready
        self.logger = logger
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        session = NGHTTP2Session(
            role: .client, limits: limits, delegate: self, allocator: context.channel.allocator)
        if context.channel.isActive && !waitForTLS { becomeReady() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        failAll(HTTPTransportError.connectionClosed())
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        if !waitForTLS { becomeReady() }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(HTTPTransportError.connectionClosed())
        ready.fail(HTTPTransportError.connectionClosed("connection closed before it was ready"))
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let handshake = event as? TLSHandshakeCompleted {
            if handshake.applicationProtocol == nil || handshake.applicationProtocol == "h2" {
                becomeReady()
            } else {
                ready.fail(
                    HTTPTransportError.protocolError(
                        "server chose \(handshake.applicationProtocol ?? "-") instead of h2"))
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("HTTP/2 client connection error", metadata: ["http.error": "\(error)"])
        ready.fail(error)
        failAll(HTTPTransportError.connectionClosed("\(error)"))
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let session else { return }
        inReadBatch = true
        do {
            try session.receive(unwrapInboundIn(data))
        } catch {
            inReadBatch = false
            logger.debug("HTTP/2 client protocol error", metadata: ["http.error": "\(error)"])
            flushOutput()
            failAll(HTTPTransportError.protocolError("\(error)"))
            context.close(promise: nil)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        inReadBatch = false
        flushOutput()
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if context.channel.isWritable {
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

    private func becomeReady() {
        guard !isReady else { return }
        isReady = true
        flushOutput()
        ready.succeed()
    }

    // MARK: Output

    private func flushOutput() {
        guard isReady, let context, let session, context.channel.isActive else { return }
        do {
            try session.writeOutput(to: context)
        } catch {
            failAll(HTTPTransportError.protocolError("\(error)"))
            context.close(promise: nil)
        }
    }

    private func scheduleFlush() {
        guard !inReadBatch, !flushScheduled, let context else { return }
        flushScheduled = true
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            bound.value.flushScheduled = false
            bound.value.flushOutput()
        }
    }

    private func failAll(_ error: any Error) {
        if closedError == nil { closedError = error }
        let open = streams
        streams = [:]
        for stream in open.values { stream.closed(error: error) }
    }

    // MARK: Requests (called on the event loop by HTTP2Client)

    /// Opens a stream for `head`; the response arrives through `stream.headContinuation`.
    func startRequest(_ stream: HTTP2ClientStream, head: HTTPRequest) {
        guard let session, closedError == nil, context?.channel.isActive == true else {
            stream.closed(error: closedError ?? HTTPTransportError.connectionClosed())
            return
        }
        guard let streamID = session.submitRequest(head, hasBody: stream.requestBody.readableBytes > 0) else {
            stream.closed(error: HTTPTransportError.connectionClosed("no new streams on this connection"))
            return
        }
        stream.streamID = streamID
        streams[streamID] = stream
        scheduleFlush()
    }

    /// Resets a stream whose request was cancelled.
    func cancel(_ stream: HTTP2ClientStream) {
        guard stream.streamID != 0, streams[stream.streamID] === stream, let session else { return }
        session.resetStream(streamID: stream.streamID, errorCode: HTTP2ErrorCode.cancel)
        scheduleFlush()
    }

    /// The application read `count` body bytes of `streamID`: open the windows by as much.
    func consume(streamID: Int32, count: Int) {
        guard let session else { return }
        session.consume(streamID: streamID, count: count)
        scheduleFlush()
    }

    /// Sends GOAWAY and closes.
    func close() {
        guard let context else { return }
        if let session, context.channel.isActive {
            session.submitGoAway()
            flushOutput()
        }
        context.close(promise: nil)
    }

    // MARK: NGHTTP2SessionDelegate

    func sessionBeginHeaders(streamID: Int32) {}

    func sessionHeaderListTooLarge(streamID: Int32) {
        session?.resetStream(streamID: streamID, errorCode: HTTP2ErrorCode.protocolError)
    }

    /// A SETTINGS, PING, WINDOW_UPDATE or PRIORITY frame was read whole (bytes that are not HTTP/2 — an HTTP/1.1
    /// answer to the preface — read as a frame of an unknown type, which nghttp2 skips, never as one of these).
    func sessionControlFrame() -> Bool {
        if !sawControlFrame {
            sawControlFrame = true
            heardHTTP2.withLockedValue { $0 = true }
        }
        return true
    }

    func sessionHeader(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard let stream = streams[streamID],
            let fieldName = HTTPField.Name(parsed: String(decoding: name, as: UTF8.self))
        else { return }
        stream.fields.append(HTTPField(name: fieldName, value: String(decoding: value, as: UTF8.self)))
    }

    func sessionPseudoHeader(streamID: Int32, name: NGHTTP2PseudoHeader, value: String) {
        if name == .status { streams[streamID]?.status = Int(value) }
    }

    func sessionHeadersComplete(streamID: Int32, endStream: Bool) {
        guard let stream = streams[streamID], let status = stream.status else { return }
        if (100..<200).contains(status) {
            stream.status = nil
            stream.fields = [:]
            return
        }
        let head = HTTPResponse(status: .init(code: status), headerFields: stream.fields)
        stream.fields = [:]
        if endStream { stream.receivedEnd() }
        if let continuation = stream.headContinuation {
            stream.headContinuation = nil
            continuation.resume(returning: HTTPClientResponse(head: head, body: HTTPClientResponseBody(source: stream)))
        }
    }

    func sessionTrailersComplete(streamID: Int32) {
        streams[streamID]?.receivedEnd()
    }

    func sessionData(streamID: Int32, chunk: borrowing NGHTTP2DataChunk) {
        // The connection window reopens at once; each stream's window only as the application reads, so one
        // unread body never blocks the others.
        session?.consumeConnection(count: chunk.count)
        guard let stream = streams[streamID], let context else { return }
        var buffer = context.channel.allocator.buffer(capacity: chunk.count)
        chunk.write(into: &buffer)
        stream.received(buffer)
    }

    func sessionEndStream(streamID: Int32) {
        streams[streamID]?.receivedEnd()
    }

    func sessionStreamClosed(streamID: Int32, errorCode: UInt32) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        let error =
            errorCode == HTTP2ErrorCode.refusedStream
            ? HTTPTransportError.streamClosed("stream refused (code \(errorCode))")
            : HTTPTransportError.streamClosed("stream reset (code \(errorCode))")
        stream.closed(error: error)
    }

    func sessionSentEndStreamBeforePeer(streamID: Int32) {}

    func sessionGoAway(lastStreamID: Int32, errorCode: UInt32) {
        closedError = HTTPTransportError.connectionClosed("server sent GOAWAY (code \(errorCode))")
    }

    func sessionReadBody(streamID: Int32, maxLength: Int) -> NGHTTP2BodyChunk {
        guard let stream = streams[streamID] else { return .bytes(ByteBuffer(), endStream: true) }
        let count = min(maxLength, stream.requestBody.readableBytes)
        let chunk = stream.requestBody.readSlice(length: count)!
        return .bytes(chunk, endStream: stream.requestBody.readableBytes == 0)
    }
}
