import HTTPTypes
import Testing

@testable import PushRelayHTTP

/// The request head an HTTP/2 stream assembles from nghttp2's field callbacks.
@Suite struct HTTP2ServerStreamTests {
    /// Feeds one header block to a new stream (its fields reusing `recent`, as a connection does) and makes the head.
    static func head(_ fields: [(String, String)], recent: HTTPFields) -> (HTTPRequest?, HTTP2ServerStream) {
        let stream = HTTP2ServerStream()
        stream.method = "POST"
        stream.scheme = "http"
        stream.authority = "relay.test"
        stream.path = "/fcm/send"
        for (name, value) in fields {
            Array(name.utf8).withUnsafeBytes { name in
                Array(value.utf8).withUnsafeBytes { value in
                    stream.addHeader(name: name, value: value, limit: 16384, recent: recent)
                }
            }
        }
        return (stream.makeHead(), stream)
    }

    @Test("a field line equal to the one at the same place in the previous head is the same field")
    func repeatedFieldLines() throws {
        let heads: [[(String, String)]] = [
            [("authorization", "key=a"), ("content-type", "application/json"), ("content-length", "12")],
            [("authorization", "key=a"), ("content-type", "application/json"), ("content-length", "12")],  // same
            [("authorization", "key=b"), ("content-type", "application/json"), ("content-length", "13")],  // changed
            [("content-type", "application/json"), ("authorization", "key=b"), ("content-length", "13")],  // order
            [("x-b", "1"), ("authorization", "key=b")],  // another name at a place, no length
            [("authorization", "key=b"), ("content-type", "application/json"), ("x-a", "1"), ("x-a", "2")],  // more
            [],  // none
            [("authorization", "key=b")],  // one again
            [("authorization", "key=b"), ("x-a", "3")],  // the first kept, one added
        ]
        var recent = HTTPFields()
        var requests: [HTTPRequest] = []
        var lengths: [Int?] = []
        for fields in heads {
            let (head, stream) = Self.head(fields, recent: recent)
            let request = try #require(head)
            requests.append(request)
            lengths.append(stream.contentLength)
            recent = request.headerFields
        }
        // Read once all heads are made: each keeps its own fields (the next heads started from its storage).
        let seen = requests.map { $0.headerFields.map { "\($0.name.canonicalName): \($0.value)" } }
        #expect(seen == heads.map { $0.map { "\($0.0): \($0.1)" } })
        #expect(lengths == [12, 12, 13, 13, nil, nil, nil, nil, nil], "content-length is read whether its field is reused or not")
    }

    @Test("a name that is no token makes no head, even after a head whose field it resembles")
    func invalidNameAfterValidHead() throws {
        let (first, _) = Self.head([("x-a", "1")], recent: [:])
        let recent = try #require(first).headerFields
        let (second, stream) = Self.head([("x a", "1")], recent: recent)
        #expect(second == nil)
        #expect(stream.headerInvalid)
    }
}
