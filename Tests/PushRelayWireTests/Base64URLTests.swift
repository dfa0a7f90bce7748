import PushRelayWire
import Testing

@Suite("Base64URL")
struct Base64URLTests {
    @Test("encode and decode are inverse for every length up to 40")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...40 {
            let bytes = Base64URL.randomBytes(length, using: &generator)
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(Base64URL.decode(text) == bytes, "length \(length)")
        }
    }

    @Test("an h2c HTTP2-Settings value, padded standard base64, and a byte outside the alphabets")
    func decode() {
        #expect(Base64URL.decode("AAMAAABkAAQAAP__") == [0, 3, 0, 0, 0, 100, 0, 4, 0, 0, 255, 255])
        #expect(Base64URL.decode("AAMAAABkAAQAAP//") == [0, 3, 0, 0, 0, 100, 0, 4, 0, 0, 255, 255])
        #expect(Base64URL.decode("aGk=") == Array("hi".utf8))
        #expect(Base64URL.decode("*") == nil)
    }

    @Test("the alphabet test accepts exactly [A-Za-z0-9_-]")
    func alphabet() {
        for byte in UInt8.min...UInt8.max {
            #expect(Base64URL.isAlphabetByte(byte) == Base64URL.alphabet.contains(byte), "byte \(byte)")
            let text = Array("abc-_XYZ019".utf8) + [byte] + Array("tail".utf8)
            let whole = text.withUnsafeBufferPointer { Base64URL.isAlphabet($0) }
            #expect(whole == Base64URL.alphabet.contains(byte), "byte \(byte) among alphabet bytes")
        }
        #expect(Array<UInt8>().withUnsafeBufferPointer { Base64URL.isAlphabet($0) })
    }
}
