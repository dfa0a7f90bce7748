import HTTPTypes
import NIOCore
import NIOHTTP1

/// Writes HTTP/1.1 responses as bytes: the status line and fields of a head, and the chunked framing of a streamed
/// body. The connection handler decides the framing and whether the connection stays open; this only writes them.
///
/// A head and a small body go out as one buffer (one write, one flush), where NIO's `HTTPResponseEncoder` wrote three
/// (head, body, end) through the pipeline.
enum HTTP1ResponseEncoding {
    /// How a response's body is delimited.
    enum Framing: Equatable {
        /// `content-length: n` (0 included).
        case length(Int)
        /// `transfer-encoding: chunked`.
        case chunked
        /// Neither: no body can follow (1xx, 204, 304), or an HTTP/1.0 stream that ends when the connection closes.
        case none
    }

    /// Fields the transport owns: a handler's own values for them are not written (the framing and the connection's
    /// fate are decided by the connection handler, and two framings in one head would be a smuggling hazard).
    static func isTransportField(_ name: HTTPField.Name) -> Bool {
        name == .contentLength || name == .transferEncoding || name == .connection
    }

    /// Appends a response head: status line, `date` (unless the response has one), the response's fields (transport
    /// fields excepted), the framing and, when
    /// `close`, `connection: close` (else, to an HTTP/1.0 client that asked to keep the connection,
    /// `connection: keep-alive`). The head is measured first and then written in one access to the buffer (a
    /// write per piece cost a bounds and exclusivity check each, about fifteen per response).
    static func writeHead(
        status: HTTPResponse.Status, fields: HTTPFields, framing: Framing, close: Bool, keepAliveForHTTP10: Bool = false,
        into buffer: inout ByteBuffer
    ) {
        // A status made from a bare code has no phrase: the standard one is written.
        let phrase = status.reasonPhrase.isEmpty ? HTTPResponseStatus(statusCode: status.code).reasonPhrase : status.reasonPhrase
        var size = statusLinePrefix.utf8CodeUnitCount + decimalDigits(status.code) + 1 + phrase.utf8.count + 2
        let date = fields[.date] == nil ? HTTPDate.now() : nil
        if let date { size += dateField.utf8CodeUnitCount + date.utf8.count + 2 }
        for field in fields where !isTransportField(field.name) {
            size += field.name.rawName.utf8.count + 2 + field.value.utf8.count + 2
        }
        switch framing {
        case .length(let length): size += contentLengthPrefix.utf8CodeUnitCount + decimalDigits(length) + 2
        case .chunked: size += chunkedField.utf8CodeUnitCount
        case .none: break
        }
        if close { size += closeField.utf8CodeUnitCount }
        if keepAliveForHTTP10 && !close { size += keepAliveField.utf8CodeUnitCount }
        size += 2
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { raw in
            var out = HeadWriter(raw)
            out.append(statusLinePrefix)
            out.appendDecimal(status.code)
            out.append(UInt8(ascii: " "))
            out.append(phrase.utf8)
            out.append(crlf)
            if let date {
                out.append(dateField)
                out.append(date.utf8)
                out.append(crlf)
            }
            for field in fields where !isTransportField(field.name) {
                out.append(field.name.rawName.utf8)
                out.append(colonSpace)
                out.append(field.value.utf8)
                out.append(crlf)
            }
            switch framing {
            case .length(let length):
                out.append(contentLengthPrefix)
                out.appendDecimal(length)
                out.append(crlf)
            case .chunked:
                out.append(chunkedField)
            case .none:
                break
            }
            if close { out.append(closeField) }
            // An HTTP/1.0 client keeps the connection only when the answer says so (RFC 9112 §9.3).
            if keepAliveForHTTP10 && !close { out.append(keepAliveField) }
            out.append(crlf)
            precondition(out.count == size, "response head measured \(size) bytes, wrote \(out.count)")
            return out.count
        }
    }

    private static let statusLinePrefix: StaticString = "HTTP/1.1 "
    private static let contentLengthPrefix: StaticString = "content-length: "
    private static let chunkedField: StaticString = "transfer-encoding: chunked\r\n"
    private static let closeField: StaticString = "connection: close\r\n"
    private static let keepAliveField: StaticString = "connection: keep-alive\r\n"
    private static let crlf: StaticString = "\r\n"
    private static let colonSpace: StaticString = ": "
    private static let dateField: StaticString = "date: "

    /// Decimal digits of a non-negative number (a negative one, never written here, counts its sign).
    static func decimalDigits(_ value: Int) -> Int {
        var rest = value.magnitude, digits = 1
        while rest >= 10 {
            digits += 1
            rest /= 10
        }
        return value < 0 ? digits + 1 : digits
    }

    /// Writes into memory measured beforehand (``writeHead(status:fields:framing:close:into:)``).
    private struct HeadWriter {
        let base: UnsafeMutableRawBufferPointer
        var count = 0

        init(_ base: UnsafeMutableRawBufferPointer) { self.base = base }

        mutating func append(_ byte: UInt8) {
            base[count] = byte
            count += 1
        }

        mutating func append(_ text: StaticString) {
            let bytes = UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
            UnsafeMutableRawBufferPointer(rebasing: base[count..<(count + bytes.count)]).copyMemory(from: bytes)
            count += bytes.count
        }

        mutating func append(_ bytes: String.UTF8View) {
            let end = count + bytes.count
            UnsafeMutableRawBufferPointer(rebasing: base[count..<end]).copyBytes(from: bytes)
            count = end
        }

        mutating func appendDecimal(_ value: Int) {
            var digits = decimalDigits(value)
            if value < 0 {
                append(UInt8(ascii: "-"))
                digits -= 1
            }
            var rest = value.magnitude
            for offset in stride(from: count + digits - 1, through: count, by: -1) {
                base[offset] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            count += digits
        }
    }

    /// Appends one chunk of a chunked body: size in hex, the bytes, CRLF. An empty `data` writes nothing (a chunk of
    /// size 0 would end the body).
    static func writeChunk(_ data: ByteBuffer, into buffer: inout ByteBuffer) {
        let count = data.readableBytes
        guard count > 0 else { return }
        buffer.writeString(String(count, radix: 16))  // a small string: no allocation
        buffer.writeStaticString("\r\n")
        buffer.writeImmutableBuffer(data)
        buffer.writeStaticString("\r\n")
    }

    /// The end of a chunked body (last chunk, no trailers).
    static let lastChunk: StaticString = "0\r\n\r\n"

    /// The bytes a chunk adds around its data, at most (16 hex digits, two CRLFs).
    static let chunkFramingBytes = 20

}
