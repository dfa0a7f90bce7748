import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import PushRelayHTTP

/// Counts the `read` calls that reach the front of the pipeline (the socket's read interest).
final class ReadCounter: ChannelOutboundHandler {
    typealias OutboundIn = Any
    var reads = 0
    func read(context: ChannelHandlerContext) {
        reads += 1
        context.read()
    }
}

/// HTTP/1.1 pipelining and response framing in an `EmbeddedChannel`, without sockets: requests behind the one being
/// answered wait in order, reads stop only while something waits, and responses are framed by the handler.
@Suite struct HTTP1PipeliningTests {
    let probe = TestRouteProbe()
    let counter = ReadCounter()
    let channel = EmbeddedChannel()

    init() throws {
        let shared = HTTPServerShared(
            responder: TestServer.makeRouter(probe: probe), configuration: HTTPServer.Configuration(),
            logger: Logger(label: "test"))
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandlers(HTTP1ServerConnectionHandler.pipeline(shared: shared))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
    }

    /// Feeds bytes as one read (NIO with auto-read asks for the next read after each).
    func feed(_ text: String) throws {
        try channel.writeInbound(ByteBuffer(string: text))
        channel.read()
        channel.embeddedEventLoop.run()
    }

    func output() throws -> String {
        channel.embeddedEventLoop.run()
        var text = ""
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
        return text.replacing(#/date: [^\r]*\r\n/#, with: "")  // every head has one (HTTP1ResponseEncodingTests)
    }

    static let deferred = "POST /deferred HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx"
    static let health = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"

    @Test func aRequestInFlightDoesNotStopReading() throws {
        try feed(Self.deferred)
        #expect(counter.reads == 1, "nothing is held, so the next read goes out while the answer is pending")
        #expect(try output().isEmpty)
        #expect(probe.answerParked("one"))
        let answer = try output()
        #expect(answer == "HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\none", "\(answer)")
        try feed(Self.health)
        #expect(try output().hasSuffix(#"{"status":"ok"}"#))
        #expect(channel.isActive)
    }

    @Test func pipelinedRequestsWaitInOrderAndHoldReads() throws {
        try feed(Self.deferred + Self.deferred + Self.health)
        #expect(counter.reads == 0, "a request waits behind the first: no read until it is served")
        #expect(try output().isEmpty, "the health check is not answered before the requests ahead of it")
        #expect(probe.answerParked("one"))
        #expect(try output() == "HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\none")
        #expect(counter.reads == 0, "the health check still waits behind the second request")
        #expect(probe.answerParked("two"))
        let rest = try output()
        #expect(rest.hasPrefix("HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\ntwoHTTP/1.1 200 OK\r\n"), "\(rest)")
        #expect(rest.hasSuffix(#"{"status":"ok"}"#), "\(rest)")
        #expect(counter.reads == 1, "everything held is served: the held read goes out")
        #expect(!probe.answerParked("none"))
    }

    /// audit-l: a client that pipelined without reading its answers grew the daemon's memory without bound (an
    /// answer counted as ended once queued, so the next request was served and the socket read again).
    @Test func pipelinedRequestsWaitWhileTheChannelCannotTakeAnswers() throws {
        try feed(Self.deferred + Self.health + Self.health)
        channel.isWritable = false
        #expect(probe.answerParked("one"))
        #expect(try output() == "HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\none", "the health checks wait")
        channel.read()
        #expect(counter.reads == 0, "no read while the answers cannot go out")
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        let rest = try output()
        #expect(rest.split(separator: #"{"status":"ok"}"#).count == 2 && rest.hasSuffix(#"{"status":"ok"}"#), "\(rest)")
        #expect(counter.reads == 1, "served and writable: the held read goes out")
    }

    @Test func aParseErrorBehindARequestWaitsForItsAnswer() throws {
        try feed(Self.deferred + "\u{01}\u{02}garbage\r\n\r\n")
        #expect(try output().isEmpty, "the error is not answered ahead of the request before it")
        #expect(channel.isActive)
        #expect(probe.answerParked("one"))
        let answer = try output()
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\noneHTTP/1.1 400 Bad Request\r\n"), "\(answer)")
        #expect(answer.contains("connection: close\r\n"))
        #expect(!channel.isActive)
    }

    @Test func inputAfterAClosingAnswerIsNotServed() throws {
        try feed(
            "POST /deferred HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx" + Self.health)
        #expect(probe.answerParked("one"))
        let answer = try output()
        #expect(answer == "HTTP/1.1 200 OK\r\ncontent-length: 3\r\nconnection: close\r\n\r\none", "\(answer)")
        #expect(!channel.isActive)
    }

    @Test func headAnswersCarryTheLengthButNoBody() throws {
        try feed("HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = try output()
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(answer.hasSuffix("content-length: 15\r\n\r\n"), "\(answer)")
        try feed(Self.health)
        #expect(try output().hasSuffix(#"{"status":"ok"}"#))
    }
}

/// The bytes ``HTTP1ResponseEncoding`` writes.
@Suite struct HTTP1ResponseEncodingTests {
    static func head(
        _ status: HTTPResponse.Status, _ fields: HTTPFields = [:], _ framing: HTTP1ResponseEncoding.Framing,
        close: Bool = false
    ) -> String {
        var buffer = ByteBuffer()
        HTTP1ResponseEncoding.writeHead(status: status, fields: fields, framing: framing, close: close, into: &buffer)
        // The date line (checked in `dateOnEveryHead`) taken out, so that the rest compares exactly.
        return String(buffer: buffer).replacing(#/date: [^\r]*\r\n/#, with: "")
    }

    @Test func dateOnEveryHead() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        var buffer = ByteBuffer()
        HTTP1ResponseEncoding.writeHead(status: .ok, fields: [:], framing: .length(0), close: false, into: &buffer)
        let head = String(buffer: buffer)
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\ndate: ") && head.hasSuffix(" GMT\r\ncontent-length: 0\r\n\r\n"), "\(head)")
        var own = ByteBuffer()
        HTTP1ResponseEncoding.writeHead(
            status: .ok, fields: [.date: "Sun, 06 Nov 1994 08:49:37 GMT"], framing: .length(0), close: false, into: &own)
        #expect(String(buffer: own).matches(of: #/ate: /#).count == 1, "one date, the handler's")
    }

    @Test func statusLineFieldsAndFraming() {
        #expect(Self.head(.ok, [.contentType: "text/plain"], .length(12))
            == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\ncontent-length: 12\r\n\r\n")
        #expect(Self.head(.noContent, [:], .none, close: true) == "HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n")
        #expect(Self.head(.ok, [:], .chunked) == "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        // A status made from a bare code gets the standard phrase; a custom phrase is kept.
        #expect(Self.head(HTTPResponse.Status(code: 429), [:], .length(0)).hasPrefix("HTTP/1.1 429 Too Many Requests\r\n"))
        #expect(Self.head(HTTPResponse.Status(code: 299, reasonPhrase: "Fine"), [:], .length(0))
            .hasPrefix("HTTP/1.1 299 Fine\r\n"))
        // Lengths at every count of digits the head is measured for, and a value with non-ASCII bytes.
        for length in [0, 9, 10, 99, 100, 1_234_567, Int(Int32.max)] {
            #expect(Self.head(.ok, [:], .length(length)) == "HTTP/1.1 200 OK\r\ncontent-length: \(length)\r\n\r\n")
        }
        #expect(Self.head(.ok, [.contentDisposition: "attachment; filename=\"é.txt\"", .server: "p"], .none, close: true)
            == "HTTP/1.1 200 OK\r\nContent-Disposition: attachment; filename=\"é.txt\"\r\nServer: p\r\nconnection: close\r\n\r\n")
        #expect(HTTP1ResponseEncoding.decimalDigits(-5) == 2 && HTTP1ResponseEncoding.decimalDigits(0) == 1)
    }

    /// Framing and the connection's fate are the transport's: a handler's values for them are not written.
    @Test func transportFieldsOfTheHandlerAreNotWritten() {
        let fields: HTTPFields = [.contentLength: "99", .transferEncoding: "chunked", .connection: "keep-alive", .server: "x"]
        #expect(Self.head(.ok, fields, .length(2)) == "HTTP/1.1 200 OK\r\nServer: x\r\ncontent-length: 2\r\n\r\n")
    }

    @Test func chunksAreHexSizedAndAnEmptyOneIsNotWritten() {
        var buffer = ByteBuffer()
        HTTP1ResponseEncoding.writeChunk(ByteBuffer(string: "hello"), into: &buffer)
        HTTP1ResponseEncoding.writeChunk(ByteBuffer(), into: &buffer)
        HTTP1ResponseEncoding.writeChunk(ByteBuffer(repeating: UInt8(ascii: "a"), count: 300), into: &buffer)
        #expect(String(buffer: buffer) == "5\r\nhello\r\n12c\r\n" + String(repeating: "a", count: 300) + "\r\n")
    }
}
