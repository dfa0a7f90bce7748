// The HTTP/1.1 request parser and connection handler fed arbitrary bytes (issue 10: the server parses HTTP/1.1
// itself). Two checks per input: the parser gives the same parts (or the same error) whether the input comes in one
// read or split into pieces (the first byte picks their size), and the whole connection handler (parser, router,
// limits, pipelining, the h2c upgrade) serves the input on an EmbeddedChannel without crashing. Built into the
// FuzzHTTP2 binary; `Fuzz/run.sh http1` runs it.
import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
@testable import PushRelayHTTP

/// What the parser makes of some input: heads, body bytes and ends in order, then the error's kind if any.
private func parts(of bytes: UnsafeBufferPointer<UInt8>, pieceSize: Int?) -> [String] {
    var parser = HTTP1RequestParser(maxHeadBytes: 2048)
    var parts: [String] = []
    var body: [UInt8] = []
    var offset = 0
    repeat {
        let end = pieceSize.map { min(bytes.count, offset + $0) } ?? bytes.count
        parser.append(ByteBuffer(bytes: UnsafeBufferPointer(rebasing: bytes[offset..<end])))
        offset = end
        do {
            while let part = try parser.next() {
                switch part {
                case .head(let head):
                    parts.append("head \(head.request.method) \(head.request.path ?? "") \(head.request.headerFields) \(head.framing) \(head.keepAlive) \(head.size)")
                case .body(let buffer):
                    body += buffer.readableBytesView
                case .end:
                    parts.append("body \(body)")
                    parts.append("end")
                    body = []
                }
            }
        } catch {
            parts.append("error \(error.kind)")
            return parts
        }
    } while offset < bytes.count
    if !body.isEmpty { parts.append("partial body \(body)") }
    return parts
}

private let http1Shared: HTTPServerShared = {
    var configuration = HTTPServer.Configuration()
    configuration.maxHeaderListSize = 1024
    return HTTPServerShared(responder: fuzzRouter, configuration: configuration, logger: Logger(label: "fuzz"))
}()

func fuzzHTTP1(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    if size > 0 {
        let whole = parts(of: bytes, pieceSize: nil)
        let split = parts(of: bytes, pieceSize: Int(bytes[0] % 64) + 1)
        if whole != split {
            fatalError("the parser read the input differently when split: \(whole) vs \(split)")
        }
    }

    let channel = EmbeddedChannel()
    do {
        try channel.pipeline.syncOperations.addHandlers(HTTP1ServerConnectionHandler.pipeline(shared: http1Shared))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        // In two reads, as a socket may deliver it.
        let cut = size / 2
        try channel.writeInbound(ByteBuffer(bytes: UnsafeBufferPointer(rebasing: bytes[..<cut])))
        channel.read()
        try channel.writeInbound(ByteBuffer(bytes: UnsafeBufferPointer(rebasing: bytes[cut...])))
        channel.read()
    } catch {
        // A connection the handler closed: fine, as long as nothing crashed.
    }
    channel.embeddedEventLoop.run()
    while (try? channel.readOutbound(as: ByteBuffer.self)) != nil {}
    _ = try? channel.finish()
    return 0
}
