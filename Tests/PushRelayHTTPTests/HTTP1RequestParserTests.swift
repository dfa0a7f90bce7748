import HTTPTypes
import NIOCore
import Testing

@testable import PushRelayHTTP

/// ``HTTP1RequestParser``: requests as the routes read them, framing, the refusals, and input split anywhere.
@Suite struct HTTP1RequestParserTests {
    /// What the parser made of some input: the parts in order (bodies joined per request), or the error.
    struct Parsed: Equatable {
        var heads: [HTTPRequest] = []
        var bodies: [String] = []
        var ends = 0
        var error: HTTP1ParseError?
    }

    /// Feeds `input` in pieces of `pieces` bytes (all at once when nil) and collects every part.
    static func parse(_ input: String, pieces: Int? = nil, maxHeadBytes: Int = 1024) -> Parsed {
        var parser = HTTP1RequestParser(maxHeadBytes: maxHeadBytes)
        var parsed = Parsed()
        var body = ""
        let bytes = Array(input.utf8)
        var offset = 0
        repeat {
            let end = pieces.map { min(bytes.count, offset + $0) } ?? bytes.count
            parser.append(ByteBuffer(bytes: bytes[offset..<end]))
            offset = end
            do {
                while let part = try parser.next() {
                    switch part {
                    case .head(let head): parsed.heads.append(head.request)
                    case .body(let buffer): body += String(buffer: buffer)
                    case .end:
                        parsed.ends += 1
                        parsed.bodies.append(body)
                        body = ""
                    }
                }
            } catch {
                parsed.error = error
                return parsed
            }
        } while offset < bytes.count
        return parsed
    }

    static func head(_ input: String) throws -> HTTP1RequestHead {
        var parser = HTTP1RequestParser(maxHeadBytes: 1024)
        parser.append(ByteBuffer(string: input))
        guard case .head(let head) = try parser.next() else { throw HTTP1ParseError.malformed("no head") }
        return head
    }

    static func error(_ input: String) -> HTTP1ParseError? { parse(input).error }

    @Test("a keep-alive connection's next head has its own fields whether its lines repeat the last head's or not")
    func repeatedFieldLines() throws {
        func request(_ fields: String) -> String { "GET / HTTP/1.1\r\nHost: h\r\n\(fields)\r\n" }
        let parsed = Self.parse(
            request("Authorization: key=a\r\nAccept: */*\r\nX-A: 1\r\n")
                + request("Authorization: key=a\r\nAccept: */*\r\nX-A: 1\r\n")  // the same lines
                + request("Authorization: key=b\r\nAccept: */*\r\nX-A: 1\r\n")  // one value changed
                + request("Accept: */*\r\nAuthorization: key=b\r\nX-A: 1\r\n")  // another order
                + request("X-B: 1\r\nAuthorization: key=b\r\n")  // another name at a place
                + request("Authorization: key=b\r\nAccept: */*\r\nX-A: 1\r\nX-A: 2\r\n")  // one more
                + request("")  // none
                + request("Accept: */*\r\n")  // one again
                + request("Accept: */*\r\nX-A: 3\r\n"))  // the first kept, one added
        #expect(parsed.error == nil)
        let fields = parsed.heads.map { head in head.headerFields.map { "\($0.name.canonicalName): \($0.value)" } }
        #expect(
            fields == [
                ["authorization: key=a", "accept: */*", "x-a: 1"],
                ["authorization: key=a", "accept: */*", "x-a: 1"],
                ["authorization: key=b", "accept: */*", "x-a: 1"],
                ["accept: */*", "authorization: key=b", "x-a: 1"],
                ["x-b: 1", "authorization: key=b"],
                ["authorization: key=b", "accept: */*", "x-a: 1", "x-a: 2"],
                [],
                ["accept: */*"],
                ["accept: */*", "x-a: 3"],
            ], "each head keeps its own fields after the next heads were read")
    }

    @Test("a keep-alive connection's next head has its own request line whether it repeats the last one or not")
    func repeatedRequestLines() throws {
        let parsed = Self.parse(
            "POST /fcm/send HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n\r\n"
                + "POST /fcm/send HTTP/1.1\r\nHost: a\r\nX-A: 2\r\n\r\n"  // the same line, another field value
                + "GET /fcm/send HTTP/1.1\r\nHost: a\r\n\r\n"  // another method
                + "GET /other HTTP/1.1\r\nHost: a\r\n\r\n"  // another path
                + "GET /other HTTP/1.1\r\nHost: b\r\n\r\n"  // another authority
                + "GET http://c/other HTTP/1.1\r\nHost: b\r\n\r\n"  // absolute form: a scheme and its authority
                + "GET /other HTTP/1.1\r\nHost: b\r\n\r\n"  // origin form again
                + "GET /other HTTP/1.0\r\n\r\n")  // no authority
        #expect(parsed.error == nil)
        let lines = parsed.heads.map { "\($0.method) \($0.scheme ?? "-") \($0.authority ?? "-") \($0.path ?? "-")" }
        #expect(
            lines == [
                "POST - a /fcm/send", "POST - a /fcm/send", "GET - a /fcm/send", "GET - a /other", "GET - b /other",
                "GET http c /other", "GET - b /other", "GET - - /other",
            ])
        #expect(parsed.heads.map { $0.headerFields[HTTPField.Name("x-a")!] } == ["1", "2", nil, nil, nil, nil, nil, nil])
    }

    @Test("names in any case are the same fields; Host is the authority, not a field")
    func fieldNames() throws {
        let head = try Self.head(
            "POST /fcm/send HTTP/1.1\r\nHOST: relay.test\r\nCONTENT-type: application/json\r\nauthorization: key=k\r\n"
                + "Content-Length: 2\r\nX-Custom:  v  \r\nContent-Lengthy: w\r\n\r\nhi")
        let request = head.request
        #expect(request.method == .post)
        #expect(request.path == "/fcm/send")
        #expect(request.authority == "relay.test")
        #expect(request.scheme == nil)
        #expect(request.headerFields[.contentType] == "application/json")
        #expect(request.headerFields[.authorization] == "key=k")
        #expect(request.headerFields[.contentLength] == "2")
        #expect(request.headerFields[HTTPField.Name("x-custom")!] == "v", "blanks around a value are not part of it")
        #expect(request.headerFields[HTTPField.Name("content-lengthy")!] == "w")
        #expect(request.headerFields.count == 5, "\(request.headerFields)")
        #expect(head.framing == .length(2))
        #expect(head.keepAlive && !head.isHTTP10 && head.hostProblem == nil)
        // The size the header-list limit counts: the target, then name + value + 4 per field (Host included).
        #expect(head.size == 9 + (4 + 10 + 4) + (12 + 16 + 4) + (13 + 5 + 4) + (14 + 1 + 4) + (8 + 1 + 4) + (15 + 1 + 4))
    }

    @Test func keepAliveByVersionAndConnection() throws {
        #expect(try Self.head("GET / HTTP/1.1\r\nHost: a\r\n\r\n").keepAlive)
        #expect(try !Self.head("GET / HTTP/1.1\r\nHost: a\r\nConnection: Close\r\n\r\n").keepAlive)
        #expect(try !Self.head("GET / HTTP/1.1\r\nHost: a\r\nConnection: te, close\r\n\r\n").keepAlive)
        #expect(try !Self.head("GET / HTTP/1.0\r\n\r\n").keepAlive)
        #expect(try Self.head("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keepAlive)
        let http10 = try Self.head("GET / HTTP/1.0\r\n\r\n")
        #expect(http10.isHTTP10 && http10.hostProblem == nil, "HTTP/1.0 may omit Host")
        // A later minor version is read as HTTP/1.1 (RFC 9110 §2.5).
        #expect(try !Self.head("GET / HTTP/1.2\r\nHost: a\r\n\r\n").isHTTP10)
    }

    @Test func hostProblems() throws {
        #expect(try Self.head("GET / HTTP/1.1\r\n\r\n").hostProblem == "an HTTP/1.1 request needs a Host field")
        #expect(try Self.head("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n").hostProblem == "more than one Host field")
        #expect(try Self.head("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n").hostProblem == "the Host field is not a valid authority")
        #expect(try Self.head("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n").hostProblem == nil)
    }

    @Test func absoluteFormTargetsNameTheAuthority() throws {
        let request = try Self.head("GET HTTP://relay.test:8080/healthz?x=1 HTTP/1.1\r\nHost: other\r\n\r\n").request
        #expect(request.scheme == "http" && request.authority == "relay.test:8080" && request.path == "/healthz?x=1")
    }

    @Test func framing() throws {
        #expect(try Self.head("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n").framing == .none)
        #expect(try Self.head("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n").framing == .chunked)
        #expect(try Self.head("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").framing == .chunked)

        #expect(
            try Self.head("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n").framing
                == .length(Int.max), "a length past Int.max is too large for any route (413), not malformed")
    }

    @Test("a request without a body ends at its head; pipelined requests come in order")
    func pipelined() {
        let parsed = Self.parse(
            "\r\nGET /a HTTP/1.1\r\nHost: a\r\n\r\nPOST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
                + "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nhi\r\n0\r\nX-T: v\r\n\r\n")
        #expect(parsed.error == nil)
        #expect(parsed.heads.map(\.path) == ["/a", "/b", "/c"])
        #expect(parsed.bodies == ["", "abc", "hi"])
        #expect(parsed.ends == 3)
    }

    @Test("input split at every size gives the same parts")
    func splitAnywhere() {
        let input =
            "POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world"
            + "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6 ; x=\"y\"\r\n world\r\n0\r\n\r\n"
            + "GET /d HTTP/1.1\r\nHost: a\r\n\r\n"
        let whole = Self.parse(input)
        #expect(whole.bodies == ["hello world", "hello world", ""])
        for pieces in 1...40 {
            #expect(Self.parse(input, pieces: pieces) == whole, "pieces of \(pieces)")
        }
    }

    @Test("what two readers could frame differently is refused", arguments: [
        "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ,\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        "GET healthz HTTP/1.1\r\nHost: a\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1e \r\n",
        "GET / HTTP/1.1\r\nHost : a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
        "GET / HTTP/1.1\nHost: a\n\n",
        "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX: a\u{0}b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX: a\nb\r\n\r\n",
        "GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1 \r\nHost: a\r\n\r\n",
        "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /\u{7F} HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /é HTTP/1.1\r\nHost: a\r\n\r\n",
        "G(T / HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET / HTTQ/1.1\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.x\r\nHost: a\r\n\r\n",
        "\u{1}\u{2}garbage\r\n\r\n",
        ": no name\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhiX\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2 x\r\nhi\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\nhi\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n8000000000000000\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad trailer\r\n\r\n",
    ])
    func refused(_ input: String) {
        let error = Self.error(input)
        #expect(error?.kind == .malformed, "\(input.debugDescription): \(String(describing: error))")
    }

    @Test func otherMajorVersionsAreNotServed() {
        #expect(Self.error("GET / HTTP/2.0\r\nHost: a\r\n\r\n")?.kind == .versionNotSupported)
        #expect(Self.error("GET / HTTP/0.9\r\nHost: a\r\n\r\n")?.kind == .versionNotSupported)
        #expect(Self.error("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n")?.kind == .malformed, "a broken HTTP/2 preface")
    }

    @Test("heads, chunk-size lines and trailers past their bounds are refused before they are whole")
    func bounds() {
        // A head that never ends: refused once more than the limit is buffered, without waiting for its end.
        let endless = "GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 2000)
        #expect(Self.parse(endless, pieces: 100, maxHeadBytes: 1024).error?.kind == .headTooLarge)
        #expect(Self.parse("GET / HTTP/1.1\r\nHost: a\r\n\r\n", maxHeadBytes: 20).error?.kind == .headTooLarge)
        let chunked = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        let longExtension = chunked + "1;" + String(repeating: "e", count: 5000)
        #expect(Self.parse(longExtension, pieces: 500).error?.kind == .malformed)
        let manyZeros = chunked + String(repeating: "0", count: 5000)
        #expect(Self.parse(manyZeros, pieces: 500).error?.kind == .malformed)
        let bigTrailers = chunked + "0\r\n" + String(repeating: "X-T: " + String(repeating: "v", count: 90) + "\r\n", count: 20)
        #expect(Self.parse(bigTrailers, pieces: 100).error?.kind == .headTooLarge)
    }

    @Test("after an error nothing more is parsed; unread input is handed over whole")
    func afterErrorsAndHandOver() throws {
        var parser = HTTP1RequestParser(maxHeadBytes: 1024)
        parser.append(ByteBuffer(string: "BAD\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"))
        #expect(throws: HTTP1ParseError.self) { _ = try parser.next() }
        #expect(try parser.next() == nil)

        var upgrade = HTTP1RequestParser(maxHeadBytes: 1024)
        upgrade.append(ByteBuffer(string: "GET / HTTP/1.1\r\nHost: a\r\n\r\nPRI * HTTP/2.0"))
        guard case .head = try upgrade.next(), case .end = try upgrade.next() else {
            Issue.record("expected a head and its end")
            return
        }
        #expect(String(buffer: upgrade.takeUnread()) == "PRI * HTTP/2.0")
        #expect(try upgrade.next() == nil)
    }

    @Test("a body in one read is a slice of it; a read past a finished request replaces the buffer")
    func bodiesAreNotCopied() throws {
        var parser = HTTP1RequestParser(maxHeadBytes: 1024)
        let read = ByteBuffer(string: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello")
        parser.append(read)
        _ = try parser.next()
        guard case .body(let body) = try parser.next() else {
            Issue.record("expected the body")
            return
        }
        let shared = read.withUnsafeReadableBytes { whole in
            body.withUnsafeReadableBytes { part in part.baseAddress == whole.baseAddress! + whole.count - 5 }
        }
        #expect(shared)
    }
}

extension HTTP1RequestPart: Equatable {
    static func == (lhs: HTTP1RequestPart, rhs: HTTP1RequestPart) -> Bool {
        switch (lhs, rhs) {
        case (.head(let a), .head(let b)): a.request == b.request
        case (.body(let a), .body(let b)): a == b
        case (.end, .end): true
        default: false
        }
    }
}

extension HTTP1RequestParserTests {
    @Test("codings the server does not decode: 501 for a transfer coding, 415 for a content coding")
    func codingRefusals() throws {
        let gzipped = try Self.head("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
        #expect(gzipped.codingRefusal?.status == .notImplemented)
        #expect(gzipped.codingRefusal?.message == "transfer coding 'gzip' is not supported; send chunked")
        let compressed = try Self.head("POST / HTTP/1.1\r\nHost: a\r\nContent-Encoding: identity, GZIP\r\nContent-Length: 1\r\n\r\n")
        #expect(compressed.codingRefusal?.status == .unsupportedMediaType)
        #expect(compressed.codingRefusal?.message == "content coding 'gzip' is not supported; send the body uncompressed")
        #expect(try Self.head("POST / HTTP/1.1\r\nHost: a\r\nContent-Encoding: Identity\r\nContent-Length: 1\r\n\r\n").codingRefusal == nil)
        #expect(try Self.head("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n").codingRefusal == nil)
    }
}
