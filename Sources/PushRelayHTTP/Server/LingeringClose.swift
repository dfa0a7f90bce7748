import NIOCore

/// Closing a connection without destroying what it has sent.
///
/// Closing a socket with unread bytes in it makes the kernel send a reset, which can destroy answers the peer has
/// not read yet: an HTTP/1.1 client that pipelined requests behind a `connection: close` answer, one whose body was
/// refused unread (`413`), an HTTP/2 peer that sent frames before it saw GOAWAY. So a closing connection shuts its
/// output after what is queued (the peer reads everything, then the end), and the handler reads and drops whatever
/// still comes until the peer closes its side or ``time`` passes; then it closes.
enum LingeringClose {
    /// How long a closing connection keeps reading (and dropping) what the peer still sends, waiting for its end.
    static let time = TimeAmount.seconds(2)

    /// Shuts the output after what is queued and sets `timer` to ``time``; a channel that cannot half-close
    /// (TLS) is closed at once. The caller drops input from now on and closes the connection when `timer` fires.
    static func start(_ context: ChannelHandlerContext, timer: ConnectionTimer?) {
        let channel = context.channel
        let closed = context.eventLoop.makePromise(of: Void.self)
        closed.futureResult.whenFailure { _ in channel.close(promise: nil) }
        context.close(mode: .output, promise: closed)
        timer?.set(in: time)
    }
}
