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
}
