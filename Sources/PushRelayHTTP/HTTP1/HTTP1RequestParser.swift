#if canImport(Glibc)
import Glibc
#endif
import HTTPTypes
import NIOCore
import PushRelayWire

/// One part of an HTTP/1.1 request, as ``HTTP1RequestParser`` reads it: the head, body bytes (any number of parts),
/// the end.
enum HTTP1RequestPart {
    case head(HTTP1RequestHead)
    case body(ByteBuffer)
    case end
}

/// A request head as ``HTTP1RequestParser`` read it: the request as the routes read it, and what the connection
/// needs to know about it.
struct HTTP1RequestHead {
    /// How the body is delimited (RFC 9112 §6.3).
    enum Framing: Equatable {
        /// No body (neither `Content-Length` nor `Transfer-Encoding`, or `Content-Length: 0`).
        case none
        /// `Content-Length` (a length past `Int.max` is `Int.max`: too large for any route).
        case length(Int)
        /// `Transfer-Encoding` ending in `chunked` (other endings are refused: the body's end could not be found).
        case chunked
    }

    /// The request: `Host` is its authority (not a field), a target in absolute form gives scheme and authority.
    var request: HTTPRequest
    /// The request came as HTTP/1.0.
    var isHTTP10: Bool
    /// Whether the request lets the connection stay open: HTTP/1.1 unless `Connection: close`, HTTP/1.0 only with
    /// `Connection: keep-alive`.
    var keepAlive: Bool
    /// The head's size as the header-list limit counts it: the target, plus name, value and 4 per field.
    var size: Int
    /// Why the `Host` field is refused (RFC 9112 §3.2), or nil.
    var hostProblem: String?
    /// The refusal of a body in a coding this server does not decode, or nil: a transfer coding other than
    /// `chunked` (`501`, RFC 9112 §6.1) or a content coding other than `identity` (`415`, RFC 9110 §15.5.16); read
    /// as is, such a body would be taken for what it is not.
    var codingRefusal: HTTPError?
    /// How the body is delimited.
    var framing: Framing
}

/// Input that is not an HTTP/1.1 request, or one this server does not read.
struct HTTP1ParseError: Error, Equatable, CustomStringConvertible {
    enum Kind: Equatable {
        /// Not HTTP/1.x syntax (answered `400`).
        case malformed
        /// A head or trailer section past the parser's limit (`431`).
        case headTooLarge
        /// `HTTP/` with a major version other than 1 (`505`).
        case versionNotSupported
    }

    var kind: Kind
    /// What was wrong, for the answer's body.
    var reason: String

    static func malformed(_ reason: String) -> HTTP1ParseError { HTTP1ParseError(kind: .malformed, reason: reason) }

    var description: String { reason }
}

/// An incremental HTTP/1.1 request parser (RFC 9112), for the server's connection handler: bytes go in as they are
/// read (``append(_:)``), parts come out one at a time (``next()``), so that a connection that stops asking for
/// parts (a request is being answered, the connection switches to HTTP/2) leaves the rest of its input here
/// (``takeUnread()``).
///
/// Strict where leniency lets two readers frame a message differently: lines end in CRLF; no blank before a
/// field's colon, no obsolete line folding, no control characters but HTAB in values; one `Content-Length` of
/// digits only, never with `Transfer-Encoding`; `chunked` only last and only once. A head past `maxHeadBytes`
/// (before its end is found) is refused, and so is a chunk-size line or trailer section past its bound, so memory
/// per connection stays bounded whatever the peer sends. After an error the parser returns nothing more.
///
/// A body in one read is handed on as a slice of that read (no copy); a read that holds only the rest of a
/// message replaces the buffer instead of being appended to it.
struct HTTP1RequestParser {
    private enum State {
        case head
        case body(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers(bytes: Int)
        case end
        /// After an error, or a body that cannot be framed: nothing more is read.
        case stopped
    }

    private var buffer = Self.empty
    private var state = State.head
    /// How much of the buffered head has been searched for its end already (a head arriving in small reads is not
    /// searched from its start each time).
    private var searched = 0
    /// The previous request: a keep-alive sender repeats its request line and most of its field lines request after
    /// request (its `Authorization`, `Content-Type`, `User-Agent`); a line equal to the one at the same place last
    /// time reuses that field instead of making and validating its value again, and the same method, target and
    /// authority reuse the request's pseudo-header fields. Forgotten by ``forgetRecentRequest()`` when the connection
    /// turns to a long response.
    private var recent: HTTPRequest?
    /// The largest head (request line and fields, with their line ends) and the largest trailer section.
    let maxHeadBytes: Int
    /// The longest chunk-size line (size and extensions).
    static let maxChunkLineBytes = 4096

    init(maxHeadBytes: Int) {
        self.maxHeadBytes = maxHeadBytes
    }

    /// Adds bytes read from the connection.
    mutating func append(_ bytes: ByteBuffer) {
        if buffer.readableBytes == 0 {
            buffer = bytes
        } else {
            var bytes = bytes
            buffer.writeBuffer(&bytes)
        }
    }

    /// Whether bytes are waiting to be parsed.
    var hasUnreadInput: Bool { buffer.readableBytes > 0 }

    /// The bytes not parsed yet; the parser then returns nothing more (the connection continues in another
    /// protocol).
    mutating func takeUnread() -> ByteBuffer {
        let rest = buffer
        buffer = Self.empty
        state = .stopped
        return rest
    }

    /// The next part, nil when more input is needed (or after an error); throws for input that is not a request.
    mutating func next() throws(HTTP1ParseError) -> HTTP1RequestPart? {
        let part = try nextPart()
        // Read to the end: the read's storage is let go (an idle connection, such as a device's stream, would
        // otherwise keep its last read buffer for as long as it lasts).
        if part == nil, buffer.readableBytes == 0, buffer.capacity > 0 { buffer = Self.empty }
        return part
    }

    private static let empty = ByteBufferAllocator().buffer(capacity: 0)

    private mutating func nextPart() throws(HTTP1ParseError) -> HTTP1RequestPart? {
        while true {
            switch state {
            case .stopped:
                return nil
            case .end:
                state = .head
                return .end
            case .head:
                do {
                    guard let head = try parseHead() else { return nil }
                    return .head(head)
                } catch {
                    state = .stopped
                    throw error
                }
            case .body(let remaining):
                guard let (part, left) = takeBody(upTo: remaining) else { return nil }
                state = left == 0 ? .end : .body(remaining: left)
                return .body(part)
            case .chunkData(let remaining):
                guard let (part, left) = takeBody(upTo: remaining) else { return nil }
                state = left == 0 ? .chunkDataEnd : .chunkData(remaining: left)
                return .body(part)
            case .chunkDataEnd:
                guard buffer.readableBytes >= 2 else { return nil }
                guard buffer.readInteger(as: UInt16.self) == 0x0D0A else {
                    state = .stopped
                    throw .malformed("chunk data not followed by CRLF")
                }
                state = .chunkSize
            case .chunkSize:
                do {
                    guard let size = try readChunkSize() else { return nil }
                    state = size == 0 ? .trailers(bytes: 0) : .chunkData(remaining: size)
                } catch {
                    state = .stopped
                    throw error
                }
            case .trailers(let bytes):
                do {
                    guard let line = try readTrailerLine(sectionBytes: bytes) else { return nil }
                    state = line == 0 ? .end : .trailers(bytes: bytes + line)
                } catch {
                    state = .stopped
                    throw error
                }
            }
        }
    }

    /// Up to `remaining` body bytes of what has been read (a slice, not a copy) and how many remain after them;
    /// nil when nothing is buffered.
    private mutating func takeBody(upTo remaining: Int) -> (ByteBuffer, Int)? {
        guard buffer.readableBytes > 0 else { return nil }
        let count = min(remaining, buffer.readableBytes)
        return (buffer.readSlice(length: count)!, remaining - count)
    }

    // MARK: Head

    private static let crlf: UInt16 = 0x0D0A

    /// Parses a whole head once its end (an empty line) has arrived; nil until then.
    private mutating func parseHead() throws(HTTP1ParseError) -> HTTP1RequestHead? {
        // Empty lines before a request line are ignored (RFC 9112 §2.2).
        while buffer.readableBytes >= 2, buffer.getInteger(at: buffer.readerIndex, as: UInt16.self) == Self.crlf {
            buffer.moveReaderIndex(forwardBy: 2)
            searched = 0
        }
        guard let length = try findHeadEnd() else {
            if buffer.readableBytes > maxHeadBytes {
                throw HTTP1ParseError(kind: .headTooLarge, reason: "request head larger than \(maxHeadBytes) bytes")
            }
            return nil
        }
        if length > maxHeadBytes {
            throw HTTP1ParseError(kind: .headTooLarge, reason: "request head larger than \(maxHeadBytes) bytes")
        }
        searched = 0
        let recent = self.recent
        let head = try buffer.withUnsafeReadableBytes { bytes in
            Result { () throws(HTTP1ParseError) in
                try Self.head(UnsafeRawBufferPointer(rebasing: bytes[..<length]), recent: recent)
            }
        }.get()
        self.recent = head.request
        buffer.moveReaderIndex(forwardBy: length)
        switch head.framing {
        case .none: state = .end
        case .length(let count): state = .body(remaining: count)
        case .chunked: state = .chunkSize
        }
        return head
    }

    /// The length of the head up to and including the empty line that ends it, once it has arrived. Every line
    /// feed is checked as it arrives: one without a carriage return before it is refused at once (a head in bare
    /// LFs would otherwise wait for an end that never comes).
    private mutating func findHeadEnd() throws(HTTP1ParseError) -> Int? {
        let from = searched
        let found = buffer.withUnsafeReadableBytes { bytes -> Int? in
            guard let base = bytes.baseAddress else { return nil }
            var index = from
            while index < bytes.count, let found = memchr(base + index, 0x0A, bytes.count - index) {
                index = base.distance(to: UnsafeRawPointer(found))
                guard index > 0, bytes[index - 1] == 0x0D else { return -1 }
                if index >= 3, bytes[index - 2] == 0x0A { return index + 1 }
                index += 1
            }
            return nil
        }
        if found == -1 { throw .malformed("a line ends in LF without CR") }
        if found == nil { searched = buffer.readableBytes }
        return found
    }

    /// Forgets the request kept for the next head (``recent``): a connection that holds a long response (an event
    /// stream) does not keep it for its whole life.
    mutating func forgetRecentRequest() {
        recent = nil
    }

    /// Parses a complete head (request line, fields, the empty line); `recent` is the previous request.
    private static func head(_ bytes: UnsafeRawBufferPointer, recent: HTTPRequest?) throws(HTTP1ParseError)
        -> HTTP1RequestHead
    {
        // Request line: method SP request-target SP HTTP-version CRLF.
        var index = 0
        while index < bytes.count, isTokenByte(bytes[index]) { index += 1 }
        guard index > 0, index < bytes.count, bytes[index] == UInt8(ascii: " ") else {
            throw .malformed("the request line does not start with a method and a space")
        }
        let methodEnd = index
        index += 1
        let targetStart = index
        while index < bytes.count, bytes[index] > 0x20, bytes[index] < 0x7F { index += 1 }
        guard index > targetStart, index < bytes.count, bytes[index] == UInt8(ascii: " ") else {
            throw .malformed("the request target is missing or holds a character it may not")
        }
        let targetEnd = index
        index += 1
        guard index + 10 <= bytes.count, bytes[index] == UInt8(ascii: "H"), bytes[index + 1] == UInt8(ascii: "T"),
            bytes[index + 2] == UInt8(ascii: "T"), bytes[index + 3] == UInt8(ascii: "P"),
            bytes[index + 4] == UInt8(ascii: "/"), isDigit(bytes[index + 5]), bytes[index + 6] == UInt8(ascii: "."),
            isDigit(bytes[index + 7]), bytes[index + 8] == 0x0D, bytes[index + 9] == 0x0A
        else {
            throw .malformed("the request line does not end with an HTTP version (HTTP/1.1)")
        }
        guard bytes[index + 5] == UInt8(ascii: "1") else {
            // `PRI * HTTP/2.0` is an HTTP/2 connection preface the protocol sniffer did not take: a broken one.
            if methodEnd == 3, bytes[0] == UInt8(ascii: "P"), bytes[1] == UInt8(ascii: "R"), bytes[2] == UInt8(ascii: "I") {
                throw .malformed("an HTTP/2 connection preface that is not whole")
            }
            throw HTTP1ParseError(kind: .versionNotSupported, reason: "only HTTP/1.0 and HTTP/1.1 are served here")
        }
        let isHTTP10 = bytes[index + 7] == UInt8(ascii: "0")
        index += 10

        let method: HTTPRequest.Method
        if methodEnd == 4, bytes[0] == UInt8(ascii: "P"), bytes[1] == UInt8(ascii: "O"), bytes[2] == UInt8(ascii: "S"),
            bytes[3] == UInt8(ascii: "T")
        {
            method = .post
        } else if methodEnd == 3, bytes[0] == UInt8(ascii: "G"), bytes[1] == UInt8(ascii: "E"), bytes[2] == UInt8(ascii: "T") {
            method = .get
        } else {
            // Every byte is a tchar, so the method is valid.
            method = HTTPRequest.Method(string(bytes, 0, methodEnd))!
        }
        let target = string(bytes, targetStart, targetEnd)

        // Read over the previous head's fields (`HTTPFields.reading(over:)`): a keep-alive sender's heads differ in a
        // field or two (Content-Length), often in none, so no field list is built per request.
        var fields = HTTPFields.reading(over: recent?.headerFields ?? HTTPFields())
        var fieldCount = 0
        var size = targetEnd - targetStart
        var authority: String?
        var hostCount = 0
        var hostProblem: String?
        var closeToken = false
        var keepAliveToken = false
        var contentLength: Int?
        var transferCodings = 0
        var chunkedCount = 0
        var lastCodingIsChunked = false
        var hasTransferEncoding = false
        var transferRefusal: HTTPError?
        var contentRefusal: HTTPError?

        // Field lines, each `name ":" OWS value OWS CRLF`, up to the empty line.
        while true {
            guard index + 1 < bytes.count else { throw .malformed("the head does not end with an empty line") }
            if bytes[index] == 0x0D {
                guard bytes[index + 1] == 0x0A else { throw .malformed("a bare CR in the head") }
                break
            }
            if bytes[index] == UInt8(ascii: " ") || bytes[index] == 0x09 {
                throw .malformed("obsolete line folding in a header field")
            }
            let nameStart = index
            while index < bytes.count, isTokenByte(bytes[index]) { index += 1 }
            guard index > nameStart, index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw .malformed("a header field without a valid name and a colon")
            }
            let nameEnd = index
            index += 1
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == 0x09 { index += 1 }
            let valueStart = index
            index = try valueLineEnd(bytes, from: index)
            var valueEnd = index
            while valueEnd > valueStart, bytes[valueEnd - 1] == UInt8(ascii: " ") || bytes[valueEnd - 1] == 0x09 {
                valueEnd -= 1
            }
            guard index + 1 < bytes.count, bytes[index + 1] == 0x0A else { throw .malformed("a bare CR in the head") }
            index += 2
            size += nameEnd - nameStart + valueEnd - valueStart + 4

            let (name, role) = fieldName(bytes, nameStart, nameEnd)
            let value = UnsafeRawBufferPointer(rebasing: bytes[valueStart..<valueEnd])
            switch role {
            case .host:
                hostCount += 1
                if hostCount > 1 {
                    hostProblem = "more than one Host field"
                } else {
                    authority = String(decoding: value, as: UTF8.self)
                    if !isAuthority(value) { hostProblem = "the Host field is not a valid authority" }
                }
                continue  // the request's authority, not a field
            case .contentLength:
                guard contentLength == nil else { throw .malformed("more than one Content-Length field") }
                guard let length = decimal(value) else { throw .malformed("Content-Length is not a number") }
                contentLength = length
            case .transferEncoding:
                hasTransferEncoding = true
                forEachListElement(value) { coding in
                    transferCodings += 1
                    lastCodingIsChunked = equalsIgnoringCase(coding, "chunked")
                    if lastCodingIsChunked {
                        chunkedCount += 1
                    } else if transferRefusal == nil {
                        transferRefusal = HTTPError(
                            .notImplemented,
                            "transfer coding '\(String(decoding: coding, as: UTF8.self))' is not supported; send chunked")
                    }
                }
            case .contentEncoding:
                forEachListElement(value) { coding in
                    if contentRefusal == nil, !equalsIgnoringCase(coding, "identity") {
                        contentRefusal = HTTPError(
                            .unsupportedMediaType,
                            "content coding '\(String(decoding: coding, as: UTF8.self).lowercased())' is not supported; "
                                + "send the body uncompressed")
                    }
                }
            case .connection:
                forEachListElement(value) { token in
                    if equalsIgnoringCase(token, "close") {
                        closeToken = true
                    } else if equalsIgnoringCase(token, "keep-alive") {
                        keepAliveToken = true
                    }
                }
            case .other:
                break
            }
            let position = fieldCount
            fieldCount += 1
            if position < fields.count {
                let kept = fields[position]
                if kept.name == name, kept.valueIs(value) { continue }
            }
            fields.put(HTTPField(name: name, value: String(decoding: value, as: UTF8.self)), at: position)
        }
        fields.keepFirst(fieldCount)
        if hostCount == 0 && !isHTTP10 { hostProblem = "an HTTP/1.1 request needs a Host field" }

        let framing: HTTP1RequestHead.Framing
        if hasTransferEncoding {
            // RFC 9112 §6.3: with both, the message's framing is in doubt (request smuggling): refused.
            guard contentLength == nil else { throw .malformed("both Content-Length and Transfer-Encoding") }
            guard chunkedCount <= 1 else { throw .malformed("chunked applied more than once") }
            if transferCodings == 0 { throw .malformed("an empty Transfer-Encoding field") }
            // RFC 9112 §6.3: without chunked last, the body's end cannot be found: 400, then the connection closes.
            guard lastCodingIsChunked else { throw .malformed("chunked is not the last transfer coding") }
            framing = .chunked
        } else if let contentLength, contentLength > 0 {
            framing = .length(contentLength)
        } else {
            framing = .none
        }

        let absolute = AbsoluteTarget(target)
        // Origin form (`/path`), absolute form, or `*` (for OPTIONS; the handler checks the method).
        guard absolute != nil || bytes[targetStart] == UInt8(ascii: "/") || target == "*" else {
            throw .malformed("the request target is not a path (/…), an absolute URL or *")
        }
        // A request target in absolute form names the authority itself; Host is ignored (RFC 9112 §3.2.2).
        let scheme = absolute?.scheme
        let requestAuthority = absolute?.authority ?? authority
        let path = absolute?.path ?? target
        let request: HTTPRequest
        if var same = recent, same.method == method, same.scheme == scheme, same.authority == requestAuthority,
            same.path == path
        {
            // The previous request line again: its pseudo-header fields are kept (not made and validated again).
            same.headerFields = fields
            request = same
        } else {
            request = HTTPRequest(
                method: method, scheme: scheme, authority: requestAuthority, path: path, headerFields: fields)
        }
        return HTTP1RequestHead(
            request: request, isHTTP10: isHTTP10, keepAlive: isHTTP10 ? keepAliveToken && !closeToken : !closeToken,
            size: size, hostProblem: hostProblem,
            codingRefusal: transferRefusal ?? contentRefusal, framing: framing)
    }

    /// The position of the CR that ends a field value starting at `index`; a control character other than HTAB
    /// before it is refused. Eight bytes at a time while none is below 0x20 or 0x7F.
    @inline(__always)
    private static func valueLineEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) throws(HTTP1ParseError) -> Int {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var index = start
        while true {
            while index + 8 <= bytes.count {
                let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                let below20 = (word &- ones &* 0x20) & ~word
                let delete = word ^ (ones &* 0x7F)
                let is7F = (delete &- ones) & ~delete
                if (below20 | is7F) & highs != 0 { break }
                index += 8
            }
            // Byte by byte through the word that holds a control character (HTAB passes, CR ends the value).
            let stop = min(index + 8, bytes.count)
            while index < stop {
                let byte = bytes[index]
                if byte == 0x0D { return index }
                if byte < 0x20 && byte != 0x09 || byte == 0x7F {
                    throw .malformed("a control character in a header field value")
                }
                index += 1
            }
            guard index < bytes.count else { throw .malformed("the head does not end with an empty line") }
        }
    }

    // MARK: Chunked bodies

    /// Reads a chunk-size line (`hex [; extensions] CRLF`); nil until the whole line has arrived.
    private mutating func readChunkSize() throws(HTTP1ParseError) -> Int? {
        let parsed = try buffer.withUnsafeReadableBytes { bytes in
            Result { () throws(HTTP1ParseError) -> (size: Int, length: Int)? in try Self.chunkSizeLine(bytes) }
        }.get()
        guard let parsed else { return nil }
        buffer.moveReaderIndex(forwardBy: parsed.length)
        return parsed.size
    }

    /// A chunk-size line's size and length, nil until it has arrived whole.
    private static func chunkSizeLine(_ bytes: UnsafeRawBufferPointer) throws(HTTP1ParseError) -> (size: Int, length: Int)? {
        var index = 0
        var size = 0
        while index < bytes.count, let digit = bytes[index].hexDigitValue {
            guard size <= (Int.max - 15) / 16 else { throw .malformed("chunk size too large") }
            size = size * 16 + Int(digit)
            index += 1
        }
        if index == bytes.count { return try Self.chunkLineNeedsMore(bytes.count) }
        guard index > 0 else { throw .malformed("a chunk without a hexadecimal size") }
        // Extensions (ignored): anything printable up to the line's end, as long as it starts with `;`; blanks only
        // before that `;` (RFC 9112 §7.1.1: BWS ";").
        let digitsEnd = index
        while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == 0x09 { index += 1 }
        if index < bytes.count, index > digitsEnd, bytes[index] != UInt8(ascii: ";") {
            throw .malformed("blanks after a chunk size without an extension")
        }
        if index < bytes.count, bytes[index] != 0x0D {
            guard bytes[index] == UInt8(ascii: ";") else { throw .malformed("an invalid chunk size") }
            while index < bytes.count, bytes[index] != 0x0D {
                if bytes[index] < 0x20 && bytes[index] != 0x09 || bytes[index] == 0x7F {
                    throw .malformed("a control character in a chunk extension")
                }
                index += 1
            }
        }
        guard index + 1 < bytes.count else { return try Self.chunkLineNeedsMore(bytes.count) }
        guard bytes[index + 1] == 0x0A else { throw .malformed("a bare CR after a chunk size") }
        return (size, index + 2)
    }

    /// Reads one trailer field line (checked like a header field, then dropped) or the empty line that ends the
    /// section: its length, 0 for the empty line; nil until the whole line has arrived.
    private mutating func readTrailerLine(sectionBytes: Int) throws(HTTP1ParseError) -> Int? {
        let limit = maxHeadBytes - sectionBytes
        let length = try buffer.withUnsafeReadableBytes { bytes in
            Result { () throws(HTTP1ParseError) -> Int? in try Self.trailerLine(bytes, limit: limit) }
        }.get()
        guard let length else { return nil }
        if length > limit {
            throw HTTP1ParseError(kind: .headTooLarge, reason: "trailer section larger than \(maxHeadBytes) bytes")
        }
        buffer.moveReaderIndex(forwardBy: length == 0 ? 2 : length)
        return length
    }

    /// A trailer line's length (0: the empty line), nil until it has arrived whole.
    private static func trailerLine(_ bytes: UnsafeRawBufferPointer, limit: Int) throws(HTTP1ParseError) -> Int? {
        guard bytes.count >= 2 else { return nil }
        if bytes[0] == 0x0D {
            guard bytes[1] == 0x0A else { throw .malformed("a bare CR in the trailer section") }
            return 0
        }
        var index = 0
        while index < bytes.count, isTokenByte(bytes[index]) { index += 1 }
        if index == bytes.count { return try Self.trailerNeedsMore(bytes.count, limit: limit) }
        guard index > 0, bytes[index] == UInt8(ascii: ":") else {
            throw .malformed("a trailer field without a valid name and a colon")
        }
        while index < bytes.count, bytes[index] != 0x0D {
            if bytes[index] < 0x20 && bytes[index] != 0x09 || bytes[index] == 0x7F {
                throw .malformed("a control character in a trailer field value")
            }
            index += 1
        }
        guard index + 1 < bytes.count else { return try Self.trailerNeedsMore(bytes.count, limit: limit) }
        guard bytes[index + 1] == 0x0A else { throw .malformed("a bare CR in the trailer section") }
        return index + 2
    }

    /// Nil (wait for more) while an unfinished chunk-size line of `count` bytes is within its bound.
    private static func chunkLineNeedsMore(_ count: Int) throws(HTTP1ParseError) -> (size: Int, length: Int)? {
        guard count <= maxChunkLineBytes else { throw .malformed("chunk-size line longer than \(maxChunkLineBytes) bytes") }
        return nil
    }

    /// Nil (wait for more) while an unfinished trailer line of `count` bytes is within what the section may still
    /// take.
    private static func trailerNeedsMore(_ count: Int, limit: Int) throws(HTTP1ParseError) -> Int? {
        guard count <= limit else { throw HTTP1ParseError(kind: .headTooLarge, reason: "trailer section too large") }
        return nil
    }

    // MARK: Bytes

    /// `tchar` (RFC 9110 §5.6.2): a bit per byte below 128 (`!#$%&'*+-.^_`|~`, digits, letters).
    @inline(__always)
    static func isTokenByte(_ byte: UInt8) -> Bool {
        if byte < 64 { return (0x03FF_6CFA_0000_0000 as UInt64) >> UInt64(byte) & 1 != 0 }
        if byte < 128 { return (0x57FF_FFFF_C7FF_FFFE as UInt64) >> UInt64(byte &- 64) & 1 != 0 }
        return false
    }

    @inline(__always)
    private static func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    private static func string(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }

    /// A decimal `Content-Length` (digits only); a value past `Int.max` is `Int.max`. nil when not 1*DIGIT.
    private static func decimal(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard !bytes.isEmpty else { return nil }
        var value = 0
        for byte in bytes {
            guard isDigit(byte) else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            value = overflow1 || overflow2 ? Int.max : sum
        }
        return value
    }

    /// Calls `body` with each non-empty element of a comma-separated list, blanks around it removed.
    private static func forEachListElement(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        var start = 0
        while start <= bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: ",") { end += 1 }
            var low = start
            var high = end
            while low < high, bytes[low] == UInt8(ascii: " ") || bytes[low] == 0x09 { low += 1 }
            while high > low, bytes[high - 1] == UInt8(ascii: " ") || bytes[high - 1] == 0x09 { high -= 1 }
            if high > low { body(UnsafeRawBufferPointer(rebasing: bytes[low..<high])) }
            start = end + 1
        }
    }

    private static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        return lowercase.withUTF8Buffer { expected in
            for index in 0..<expected.count where lowercased(bytes[index]) != expected[index] { return false }
            return true
        }
    }

    @inline(__always)
    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
    }

    /// An authority as a `Host` value may be: no blanks, controls, paths, queries, fragments or quotes.
    private static func isAuthority(_ bytes: UnsafeRawBufferPointer) -> Bool {
        !bytes.contains { byte in
            byte <= 0x20 || byte == 0x7F || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?")
                || byte == UInt8(ascii: "#") || byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\"")
        }
    }

    /// `Host` (HTTPTypes marks its own unavailable: the request's authority stands for it).
    private static let hostName = HTTPField.Name("Host")!

    /// Fields the parser itself reads.
    private enum FieldRole {
        case other, host, contentLength, transferEncoding, connection, contentEncoding
    }

    /// The field name (the common ones without building a string) and what the parser does with it.
    private static func fieldName(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> (HTTPField.Name, FieldRole) {
        let name = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
        switch name.count {
        case 4:
            if equalsIgnoringCase(name, "host") { return (hostName, .host) }
        case 6:
            if equalsIgnoringCase(name, "accept") { return (.accept, .other) }
            if equalsIgnoringCase(name, "expect") { return (.expect, .other) }
        case 7:
            if equalsIgnoringCase(name, "upgrade") { return (.upgrade, .other) }
        case 10:
            if equalsIgnoringCase(name, "user-agent") { return (.userAgent, .other) }
            if equalsIgnoringCase(name, "connection") { return (.connection, .connection) }
        case 12:
            if equalsIgnoringCase(name, "content-type") { return (.contentType, .other) }
        case 13:
            if equalsIgnoringCase(name, "authorization") { return (.authorization, .other) }
        case 14:
            if equalsIgnoringCase(name, "content-length") { return (.contentLength, .contentLength) }
        case 16:
            if equalsIgnoringCase(name, "content-encoding") { return (.contentEncoding, .contentEncoding) }
        case 17:
            if equalsIgnoringCase(name, "transfer-encoding") { return (.transferEncoding, .transferEncoding) }
        default:
            break
        }
        // Every byte is a tchar (checked by the caller), so the name is valid.
        return (HTTPField.Name(String(decoding: name, as: UTF8.self))!, .other)
    }
}

/// A request target in absolute form (`http://host:port/path?query`): its scheme, authority, and the path with
/// the query (`/` when the target has none).
struct AbsoluteTarget: Equatable {
    var scheme: String
    var authority: String
    var path: String

    init?(_ target: String) {
        let bytes = target.utf8
        guard bytes.first != UInt8(ascii: "/"), let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let scheme = target[..<colon].lowercased()
        guard scheme == "http" || scheme == "https", target[colon...].hasPrefix("://") else { return nil }
        let rest = target[target.utf8.index(colon, offsetBy: 3)...]
        let end = rest.utf8.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
        let authority = rest[..<end]
        guard !authority.isEmpty else { return nil }
        let path = rest[end...]
        self.scheme = scheme
        self.authority = String(authority)
        self.path = path.first == "/" ? String(path) : "/" + path
    }
}
