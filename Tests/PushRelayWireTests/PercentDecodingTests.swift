import PushRelayWire
import Testing

@Suite("PercentDecoding")
struct PercentDecodingTests {
    @Test("form and query text: + is a space, %XX a byte, UTF-8 assembled")
    func form() {
        #expect(PercentDecoding.decode("a+b%20c%2Bd", plus: .space) == "a b c+d")
        #expect(PercentDecoding.decode("caf%C3%A9", plus: .space) == "café")
        #expect(PercentDecoding.decode("plain", plus: .space) == "plain")
    }

    @Test("path segments: + stays a plus")
    func path() {
        #expect(PercentDecoding.decode("a+b%2Fc", plus: .plus) == "a+b/c")
    }

    @Test("a truncated or non-hex escape, or bytes that are not UTF-8, decode to nil", arguments: [
        "%", "%4", "%zz", "a%g1", "%FF",
    ])
    func invalid(text: String) {
        #expect(PercentDecoding.decode(text, plus: .space) == nil)
        #expect(PercentDecoding.decode(text, plus: .plus) == nil)
    }

    @Test("a path's normal form (RFC 3986 §6.2.2): unreserved escapes decoded, other escapes' hex in upper case")
    func normalizedPath() {
        #expect(PercentDecoding.normalizedPath("/fcm/%73end") == "/fcm/send")
        #expect(PercentDecoding.normalizedPath("/%7E%2d%2E%5F/%41%7a%30") == "/~-._/Az0")
        #expect(PercentDecoding.normalizedPath("/a%2fb%c3%a9") == "/a%2Fb%C3%A9")
        // Reserved characters stay escaped: %2F is not a segment separator.
        #expect(PercentDecoding.normalizedPath("/fcm%2Fsend") == nil)
        #expect(PercentDecoding.normalizedPath("/fcm/send") == nil)
        #expect(PercentDecoding.normalizedPath("/fcm/%7") == nil)
        #expect(PercentDecoding.normalizedPath("/fcm/%zzsend") == nil)
    }
}
