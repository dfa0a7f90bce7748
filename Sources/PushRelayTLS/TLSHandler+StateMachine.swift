extension TLSHandler {
    /// The connection's lifecycle as a value: events in, what the handler must do out. No OpenSSL, no NIO here,
    /// so every transition is tested without sockets (`TLSHandlerStateMachineTests`).
    struct StateMachine {
        enum State: Equatable {
            /// Handler added, channel not active yet; `flushPending` as in `handshaking`.
            case idle(flushPending: Bool)
            /// Handshake under way; `flushPending` records a `flush` that must run once it completes.
            case handshaking(flushPending: Bool)
            /// Plaintext flows.
            case active
            /// close_notify sent or a fatal error met; waiting for the socket to close.
            case closing
            /// The channel is inactive.
            case closed
        }

        private(set) var state = State.idle(flushPending: false)

        /// Channel became active (or the handler was added to an active channel).
        /// Returns `true` when the handshake starts now (arm the timer; a client sends its ClientHello).
        mutating func channelActive() -> Bool {
            guard case .idle(let flushPending) = state else { return false }
            state = .handshaking(flushPending: flushPending)
            return true
        }

        enum ReadAction: Equatable {
            case ignore
            case feedAndHandshake
            case feedAndRead
        }

        /// Ciphertext arrived.
        func channelRead() -> ReadAction {
            switch state {
            case .handshaking: .feedAndHandshake
            case .active: .feedAndRead
            case .idle, .closing, .closed: .ignore
            }
        }

        /// Returns whether writes flushed during the handshake must be encrypted and flushed now.
        mutating func handshakeCompleted() -> Bool {
            guard case .handshaking(let flushPending) = state else { return false }
            state = .active
            return flushPending
        }

        /// A failure or the timeout ended the handshake. Returns `true` if it was still under way (report it once,
        /// fail the pending writes, send any alert, close); `false` when it had already ended.
        mutating func handshakeFailed() -> Bool {
            guard case .handshaking = state else { return false }
            state = .closing
            return true
        }

        /// Whether a read or write after the handshake may proceed.
        var isActive: Bool { state == .active }

        /// A record error after the handshake. Returns `true` if the handler must fire it and close.
        mutating func recordFailed() -> Bool {
            guard state == .active else { return false }
            state = .closing
            return true
        }

        enum WriteAction: Equatable {
            case buffer
            case fail
        }

        func write() -> WriteAction {
            switch state {
            case .idle, .handshaking, .active: .buffer
            case .closing, .closed: .fail
            }
        }

        enum FlushAction: Equatable {
            /// Remember it; the handshake is not done.
            case deferred
            /// Encrypt the buffered writes and flush.
            case encryptAndFlush
            /// Nothing of ours to encrypt; pass the flush down.
            case flush
        }

        mutating func flush() -> FlushAction {
            switch state {
            case .idle:
                state = .idle(flushPending: true)
                return .deferred
            case .handshaking:
                state = .handshaking(flushPending: true)
                return .deferred
            case .active:
                return .encryptAndFlush
            case .closing, .closed:
                return .flush
            }
        }

        enum CloseAction: Equatable {
            /// Send close_notify, close once it is written.
            case closeGracefully
            /// No TLS session to end: close the socket now.
            case closeNow
            /// A close is under way: complete the caller's promise with it.
            case joinClose
            /// Fail the caller's promise with `alreadyClosed`.
            case alreadyClosed
        }

        /// The application asked to close.
        mutating func close() -> CloseAction {
            switch state {
            case .active:
                state = .closing
                return .closeGracefully
            case .idle, .handshaking:
                state = .closing
                return .closeNow
            case .closing:
                return .joinClose
            case .closed:
                return .alreadyClosed
            }
        }

        /// The peer sent close_notify. Returns `true` if we answer with ours and close.
        mutating func closeNotifyReceived() -> Bool {
            guard state == .active else { return false }
            state = .closing
            return true
        }

        /// The channel went inactive. Returns `true` if a handshake was cut short (report it).
        mutating func channelInactive() -> Bool {
            let cutShort =
                switch state {
                case .idle, .handshaking: true
                case .active, .closing, .closed: false
                }
            state = .closed
            return cutShort
        }
    }
}
