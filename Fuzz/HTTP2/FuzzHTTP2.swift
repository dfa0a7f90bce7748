// The HTTP/2 server fed arbitrary bytes after a valid client preface (issue 12, item 7): the connection handler
// (nghttp2 session, stream table, limits, deadlines, body budget, router) runs on an EmbeddedChannel, one fresh
// connection per input, and every byte it writes back is drained. Built and run by `Fuzz/run.sh http2`.
#if canImport(Glibc)
import Glibc
#endif
import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
@testable import PushRelayHTTP

/// The routes both server fuzz targets serve (HTTP/2 here, HTTP/1.1 in FuzzHTTP1.swift).
let fuzzRouter: HTTPRouter = {
    let router = HTTPRouter()
    router.add(.get, "/healthz", .immediate { _, _ in HTTPServerResponse(status: .ok, body: .bytes(ByteBuffer(string: "ok"))) })
    router.add(.post, "/echo", maxBodyBytes: 4096, .immediate { _, body in HTTPServerResponse(status: .ok, body: .bytes(body)) })
    router.add(.get, "/stream", .immediate { _, _ in
        HTTPServerResponse(status: .ok, body: .detachedStream { writer in
            writer.write(ByteBuffer(string: "data: one\n\n")) { _ in }
            writer.finish()
        })
    })
    // Captures: the trie walk splits the path into segments and decodes them (a single capture) or joins the rest.
    router.add(.get, "/items/{id}", .immediate { request, _ in
        HTTPServerResponse(status: .ok, body: .bytes(ByteBuffer(string: request.pathParameters["id"] ?? "")))
    })
    router.add(.post, "/v1/projects/{path*}", maxBodyBytes: 4096, .immediate { request, _ in
        HTTPServerResponse(status: .ok, body: .bytes(ByteBuffer(string: request.pathParameters["path"] ?? "")))
    })
    return router
}()

private let shared: HTTPServerShared = {
    var configuration = HTTPServer.Configuration()
    configuration.maxBufferedBodyBytesPerConnection = 16 * 1024
    configuration.maxBufferedBodyBytes = 64 * 1024
    return HTTPServerShared(responder: fuzzRouter, configuration: configuration, logger: Logger(label: "fuzz"))
}()

private let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP2(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let channel = EmbeddedChannel()
    do {
        try channel.pipeline.syncOperations.addHandler(HTTP2ServerConnectionHandler(shared: shared))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        var buffer = channel.allocator.buffer(capacity: preface.count + size)
        buffer.writeBytes(preface)
        buffer.writeBytes(UnsafeBufferPointer(start: data, count: size))
        // In two reads, as a socket may deliver it: the preface, then the rest.
        let rest = buffer.getSlice(at: preface.count, length: size)!
        buffer.moveWriterIndex(to: preface.count)
        try channel.writeInbound(buffer)
        try channel.writeInbound(rest)
    } catch {
        // A connection the handler closed: fine, as long as nothing crashed.
    }
    channel.embeddedEventLoop.run()
    while (try? channel.readOutbound(as: ByteBuffer.self)) != nil {}
    _ = try? channel.finish()
    return 0
}

// SwiftPM links an executable target with `main` defined as `<module>_main`; libFuzzer's own `main` is then not
// linked in, so this entry point starts libFuzzer's driver with the callback above.
@_silgen_name("LLVMFuzzerRunDriver")
private func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

@_cdecl("FuzzHTTP2_main")
public func fuzzMain(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> CInt {
    var count = argc
    var arguments = argv
    // One binary, two targets: Fuzz/run.sh sets PUSHRELAY_FUZZ_TARGET to http1 or http2.
    if getenv("PUSHRELAY_FUZZ_TARGET").map({ String(cString: $0) }) == "http1" {
        return runFuzzerDriver(&count, &arguments) { data, size in fuzzHTTP1(data, size) }
    }
    return runFuzzerDriver(&count, &arguments) { data, size in fuzzHTTP2(data, size) }
}
