import HTTPTypes
import NIOCore

@testable import PushRelayHTTP

/// An HTTP/2 client made of a bare nghttp2 session, for driving server handlers in an `EmbeddedChannel`.
final class FakeHTTP2Peer: NGHTTP2SessionDelegate {
    private(set) var session: NGHTTP2Session!
    var statuses: [Int32: Int] = [:]
    var headers: [Int32: [String: String]] = [:]
    var bodies: [Int32: String] = [:]
    var ended: Set<Int32> = []
    var closed: [Int32: UInt32] = [:]
    var goAwayCode: UInt32?
    var requestBodies: [Int32: ByteBuffer] = [:]

    init() {
        session = NGHTTP2Session(
            role: .client,
            limits: HTTP2Client.Configuration().sessionLimits,
            delegate: self,
            allocator: ByteBufferAllocator())
    }

    func request(_ method: HTTPRequest.Method, _ path: String, fields: HTTPFields = [:], body: String? = nil) -> Int32 {
        let head = HTTPRequest(method: method, scheme: "http", authority: "test", path: path, headerFields: fields)
        let id = session.submitRequest(head, hasBody: body != nil)!
        if let body { requestBodies[id] = ByteBuffer(string: body) }
        return id
    }

    func output() -> ByteBuffer {
        var buffer = ByteBuffer()
        _ = try! session.send(into: &buffer, limit: 1 << 24)
        return buffer
    }

    func sessionBeginHeaders(streamID: Int32) {}
    func sessionHeaderListTooLarge(streamID: Int32) {}
    func sessionControlFrame() -> Bool { true }
    func sessionHeader(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        headers[streamID, default: [:]][String(decoding: name, as: UTF8.self)] = String(decoding: value, as: UTF8.self)
    }
    func sessionPseudoHeader(streamID: Int32, name: NGHTTP2PseudoHeader, value: String) {
        if name == .status { statuses[streamID] = Int(value) }
    }
    func sessionHeadersComplete(streamID: Int32, endStream: Bool) { if endStream { ended.insert(streamID) } }
    func sessionTrailersComplete(streamID: Int32) { ended.insert(streamID) }
    func sessionData(streamID: Int32, chunk: borrowing NGHTTP2DataChunk) {
        var buffer = ByteBuffer()
        chunk.write(into: &buffer)
        bodies[streamID, default: ""] += String(buffer: buffer)
        session.consume(streamID: streamID, count: chunk.count)
        session.consumeConnection(count: chunk.count)
    }
    func sessionEndStream(streamID: Int32) { ended.insert(streamID) }
    func sessionStreamClosed(streamID: Int32, errorCode: UInt32) { closed[streamID] = errorCode }
    func sessionSentEndStreamBeforePeer(streamID: Int32) {}
    func sessionGoAway(lastStreamID: Int32, errorCode: UInt32) { goAwayCode = errorCode }
    func sessionReadBody(streamID: Int32, maxLength: Int) -> NGHTTP2BodyChunk {
        var body = requestBodies[streamID] ?? ByteBuffer()
        let chunk = body.readSlice(length: min(maxLength, body.readableBytes))!
        requestBodies[streamID] = body
        return .bytes(chunk, endStream: body.readableBytes == 0)
    }
}
