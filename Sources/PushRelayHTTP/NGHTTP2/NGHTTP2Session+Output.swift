import NIOCore

extension NGHTTP2Session {
    /// The output pump both HTTP/2 handlers (server and client) run: writes what nghttp2 has to send into `context`
    /// while the channel is writable, in buffers of up to 64 KiB, and flushes once at the end — also when it throws
    /// (a fatal `NGHTTP2Error`, after what was written before it). Stops while the channel is unwritable: nghttp2
    /// then keeps the frames, and the handler calls this again from `channelWritabilityChanged`.
    func writeOutput(to context: ChannelHandlerContext) throws(NGHTTP2Error) {
        var wrote = false
        defer { if wrote { context.flush() } }
        while context.channel.isWritable {
            var out = context.channel.allocator.buffer(capacity: 4096)
            let more = try self.send(into: &out, limit: 64 * 1024)
            if out.readableBytes > 0 {
                context.write(NIOAny(out), promise: nil)
                wrote = true
            }
            if !more { break }
        }
    }
}
