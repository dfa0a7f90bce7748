import Logging
import NIOCore

/// A TLS endpoint in a NIO pipeline: ciphertext below, plaintext above.
///
/// Reads: ciphertext is fed to OpenSSL; during the handshake OpenSSL's replies are written out at once; after it,
/// `TLSHandshakeCompleted` is fired, then decrypted bytes are passed up. Writes: plaintext is held until `flush`,
/// then encrypted in records of up to 16 KiB and written below with the callers' promises; from then on the
/// socket's back-pressure (writability) reaches the upper handlers unchanged. Writes issued before the handshake
/// completes wait for it. `close` sends close_notify, waits (bounded) for it to be written, then closes.
///
/// Failures: the handshake timeout, and every handshake failure, close the connection. On a server they are
/// logged once at `info` with OpenSSL's reason and not passed on (the peer caused them; the listener goes on);
/// on a client they are fired as a `TLSError` through `errorCaught`. Record errors after the handshake are fired
/// as `TLSError` on both sides, then the connection is closed.
final class TLSHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    enum Role {
        case server
        case client
    }

    /// Plaintext is encrypted in pieces of this size: one full TLS record each.
    private static let recordSize = 16_384
    /// How long `close` waits for close_notify to leave before closing anyway.
    private static let closeNotifyTimeout = TimeAmount.seconds(3)

    private let connection: SSLConnection
    private let role: Role
    private let handshakeTimeout: TimeAmount
    private var logger: Logger
    private var state = StateMachine()
    private var pendingWrites = CircularBuffer<(data: ByteBuffer, promise: EventLoopPromise<Void>?)>()
    private var handshakeTimer: Scheduled<Void>?
    private var failureReported = false
    /// TLS 1.3: the peer's close_notify came; it ends the peer's side only (RFC 8446 §6.1), and the layer above was
    /// told (`ChannelEvent.inputClosed`).
    private var peerClosedInput = false

    init(connection: SSLConnection, role: Role, handshakeTimeout: TimeAmount, logger: Logger) {
        self.connection = connection
        self.role = role
        self.handshakeTimeout = handshakeTimeout
        self.logger = logger
    }

    // MARK: Lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive {
            start(context: context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        handshakeTimer?.cancel()
        handshakeTimer = nil
        failPendingWrites(ChannelError.ioOnClosedChannel)
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        let wasHandshaking = state.channelInactive()
        handshakeTimer?.cancel()
        handshakeTimer = nil
        failPendingWrites(ChannelError.ioOnClosedChannel)
        if wasHandshaking {
            reportHandshakeFailure(
                TLSError(code: .closedDuringHandshake, message: "connection closed before the handshake completed"),
                context: context
            )
        }
        context.fireChannelInactive()
    }

    private func start(context: ChannelHandlerContext) {
        guard state.channelActive() else { return }
        if let remote = context.channel.remoteAddress {
            logger[metadataKey: "tls.peer"] = "\(remote)"
        }
        handshakeTimer = context.eventLoop.assumeIsolated().scheduleTask(in: handshakeTimeout) { [self] in
            handshakeFailed(
                TLSError(code: .handshakeTimeout, message: "handshake not completed within \(handshakeTimeout)"),
                context: context
            )
        }
        if role == .client {
            // Sends the ClientHello.
            advanceHandshake(context: context)
        }
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch state.channelRead() {
        case .ignore:
            return
        case .feedAndHandshake:
            connection.feed(unwrapInboundIn(data))
            advanceHandshake(context: context)
            // The peer's first plaintext may have come with its last handshake message.
            if state.isActive {
                readPlaintext(context: context)
            }
        case .feedAndRead:
            connection.feed(unwrapInboundIn(data))
            readPlaintext(context: context)
        }
    }

    private func advanceHandshake(context: ChannelHandlerContext) {
        switch connection.handshake() {
        case .needsMoreData:
            sendCiphertext(context: context, promise: nil)
            context.flush()
        case .failed(let error):
            handshakeFailed(error, context: context)
        case .complete:
            let flushPending = state.handshakeCompleted()
            handshakeTimer?.cancel()
            handshakeTimer = nil
            // A server's last flight (or a client's Finished) goes out now.
            sendCiphertext(context: context, promise: nil)
            context.flush()
            let event = TLSHandshakeCompleted(
                applicationProtocol: connection.applicationProtocol,
                protocolVersion: connection.protocolVersion
            )
            logger.debug(
                "TLS handshake completed",
                metadata: [
                    "tls.version": "\(event.protocolVersion)",
                    "tls.cipher": "\(connection.cipherName)",
                    "tls.alpn": "\(event.applicationProtocol ?? "none")",
                ]
            )
            context.fireUserInboundEventTriggered(event)
            if flushPending, state.isActive {
                encryptPendingWrites(context: context)
                context.flush()
            }
        }
    }

    private func readPlaintext(context: ChannelHandlerContext) {
        var plaintext = context.channel.allocator.buffer(capacity: 0)
        let result = connection.readPlaintext(into: &plaintext)
        // Reads can produce output too (TLS 1.3 key update replies, alerts).
        if sendCiphertext(context: context, promise: nil) {
            context.flush()
        }
        if plaintext.readableBytes > 0 {
            context.fireChannelRead(wrapInboundOut(plaintext))
        }
        switch result {
        case .needsMoreData:
            break
        case .closeNotify:
            if connection.protocolVersion == "TLSv1.3", state.isActive {
                // TLS 1.3: the peer is done sending, not reading (RFC 8446 §6.1). The layer above answers what it
                // read and closes, which sends our close_notify; told once.
                if !peerClosedInput {
                    peerClosedInput = true
                    context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
                }
            } else if state.closeNotifyReceived() {
                // TLS 1.2: answer with our close_notify and close (RFC 5246 §7.2.1).
                closeGracefully(context: context, promise: nil)
            }
        case .failed(let error):
            if state.recordFailed() {
                context.fireErrorCaught(error)
                context.close(promise: nil)
            }
        }
    }

    // MARK: Outbound

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch state.write() {
        case .buffer:
            pendingWrites.append((unwrapOutboundIn(data), promise))
        case .fail:
            promise?.fail(ChannelError.ioOnClosedChannel)
        }
    }

    func flush(context: ChannelHandlerContext) {
        switch state.flush() {
        case .deferred:
            break
        case .encryptAndFlush:
            encryptPendingWrites(context: context)
            context.flush()
        case .flush:
            context.flush()
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .all || mode == .output else {
            context.close(mode: mode, promise: promise)
            return
        }
        switch state.close() {
        case .closeGracefully:
            // Writes not flushed before close are dropped, as NIO does for a plain socket.
            failPendingWrites(ChannelError.ioOnClosedChannel)
            closeGracefully(context: context, promise: promise)
        case .closeNow:
            handshakeTimer?.cancel()
            handshakeTimer = nil
            failPendingWrites(ChannelError.ioOnClosedChannel)
            context.close(mode: .all, promise: promise)
        case .joinClose:
            if let promise {
                context.channel.closeFuture.cascade(to: promise)
            }
        case .alreadyClosed:
            promise?.fail(ChannelError.alreadyClosed)
        }
    }

    /// Sends close_notify, then closes once it is written (or after `closeNotifyTimeout`).
    private func closeGracefully(context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        connection.shutdown()
        let written = context.eventLoop.makePromise(of: Void.self)
        if sendCiphertext(context: context, promise: written) {
            context.flush()
        } else {
            written.succeed()
        }
        let loop = context.eventLoop.assumeIsolated()
        let timer = loop.scheduleTask(in: Self.closeNotifyTimeout) {
            written.fail(ChannelError.ioOnClosedChannel)
        }
        written.futureResult.assumeIsolated().whenComplete { _ in
            timer.cancel()
            if context.channel.isActive {
                context.close(mode: .all, promise: promise)
            } else if let promise {
                context.channel.closeFuture.cascade(to: promise)
            }
        }
    }

    /// Encrypts every pending write, coalescing small ones into full records, and writes the ciphertext below
    /// with one promise that completes the callers' promises.
    private func encryptPendingWrites(context: ChannelHandlerContext) {
        guard !pendingWrites.isEmpty else { return }
        var promises: [EventLoopPromise<Void>] = []
        var batch = context.channel.allocator.buffer(capacity: 0)
        var failure: TLSError?
        while let (data, promise) = pendingWrites.popFirst() {
            if let promise { promises.append(promise) }
            if data.readableBytes >= Self.recordSize {
                if batch.readableBytes > 0 {
                    failure = failure ?? connection.writePlaintext(batch)
                    batch.clear()
                }
                failure = failure ?? connection.writePlaintext(data)
            } else {
                var data = data
                batch.writeBuffer(&data)
                if batch.readableBytes >= Self.recordSize {
                    failure = failure ?? connection.writePlaintext(batch)
                    batch.clear()
                }
            }
        }
        if batch.readableBytes > 0 {
            failure = failure ?? connection.writePlaintext(batch)
        }
        if let failure {
            for promise in promises { promise.fail(failure) }
            if state.recordFailed() {
                context.fireErrorCaught(failure)
                context.close(promise: nil)
            }
            return
        }
        let combined: EventLoopPromise<Void>?
        switch promises.count {
        case 0: combined = nil
        case 1: combined = promises[0]
        default:
            let promise = context.eventLoop.makePromise(of: Void.self)
            promise.futureResult.assumeIsolated().whenComplete { result in
                for waiting in promises { waiting.completeWith(result) }
            }
            combined = promise
        }
        if !sendCiphertext(context: context, promise: combined) {
            combined?.succeed()
        }
    }

    /// Writes (without flushing) whatever OpenSSL has queued; `false` when there was nothing.
    @discardableResult
    private func sendCiphertext(context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) -> Bool {
        guard let ciphertext = connection.takeCiphertext(allocator: context.channel.allocator) else { return false }
        context.write(wrapOutboundOut(ciphertext), promise: promise)
        return true
    }

    // MARK: Failures

    private func handshakeFailed(_ error: TLSError, context: ChannelHandlerContext) {
        guard state.handshakeFailed() else { return }
        handshakeTimer?.cancel()
        handshakeTimer = nil
        failPendingWrites(error)
        reportHandshakeFailure(error, context: context)
        // Send OpenSSL's alert (e.g. protocol_version) before closing, if it queued one.
        let written = context.eventLoop.makePromise(of: Void.self)
        if sendCiphertext(context: context, promise: written) {
            context.flush()
        } else {
            written.succeed()
        }
        written.futureResult.assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    private func reportHandshakeFailure(_ error: TLSError, context: ChannelHandlerContext) {
        guard !failureReported else { return }
        failureReported = true
        switch role {
        case .server:
            logger.info(
                "TLS handshake failed",
                metadata: ["tls.error.code": "\(error.code)", "tls.error": "\(error.message)"]
            )
            context.fireUserInboundEventTriggered(TLSHandshakeFailed(error: error))
        case .client:
            context.fireErrorCaught(error)
        }
    }

    private func failPendingWrites(_ error: any Error) {
        while let (_, promise) = pendingWrites.popFirst() {
            promise?.fail(error)
        }
    }
}
