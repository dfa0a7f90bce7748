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

    /// Appends a response head: status line, the response's fields (transport fields excepted), the framing and, when
    /// `close`, `connection: close`.
    static func writeHead(
        status: HTTPResponse.Status, fields: HTTPFields, framing: Framing, close: Bool, into buffer: inout ByteBuffer
    ) {
        buffer.writeStaticString("HTTP/1.1 ")
        buffer.writeString(String(status.code))
        buffer.writeInteger(UInt8(ascii: " "))
        // A status made from a bare code has no phrase: the standard one is written.
        buffer.writeString(
            status.reasonPhrase.isEmpty ? HTTPResponseStatus(statusCode: status.code).reasonPhrase : status.reasonPhrase)
        buffer.writeStaticString("\r\n")
        for field in fields where !isTransportField(field.name) {
            buffer.writeString(field.name.rawName)
            buffer.writeStaticString(": ")
            buffer.writeString(field.value)
            buffer.writeStaticString("\r\n")
        }
        switch framing {
        case .length(let length):
            buffer.writeStaticString("content-length: ")
            buffer.writeString(String(length))
            buffer.writeStaticString("\r\n")
        case .chunked:
            buffer.writeStaticString("transfer-encoding: chunked\r\n")
        case .none:
            break
        }
        if close { buffer.writeStaticString("connection: close\r\n") }
        buffer.writeStaticString("\r\n")
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
