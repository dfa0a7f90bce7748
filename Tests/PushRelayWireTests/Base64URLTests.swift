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

    /// The test reads eight bytes at a time: every byte value at every place of a word and of the tail after the
    /// words, beside every kind of alphabet byte (a carry or borrow between a word's bytes would show as a wrong
    /// answer for a neighbour).
    @Test("the alphabet test over whole words answers every byte at every place as the byte test does")
    func alphabetWordsAtEveryPlace() {
        let filler = Array("Az09-_Zz9a_-AZ0z_".utf8)
        for byte in UInt8.min...UInt8.max {
            let expected = Base64URL.isAlphabetByte(byte)
            for length in [8, 17] {
                for place in 0..<length {
                    var text = Array(filler.prefix(length))
                    text[place] = byte
                    let answer = text.withUnsafeBufferPointer { Base64URL.isAlphabet($0) }
                    #expect(answer == expected, "byte \(byte) at \(place) of \(length)")
                }
            }
        }
        // Each range's first and last bytes, and the ones just outside, in one word.
        let edges: [(UInt8, Bool)] = [
            (0x2C, false), (0x2D, true), (0x2E, false), (0x2F, false), (0x30, true), (0x39, true), (0x3A, false),
            (0x40, false), (0x41, true), (0x5A, true), (0x5B, false), (0x5E, false), (0x5F, true), (0x60, false),
            (0x61, true), (0x7A, true), (0x7B, false), (0xAD, false), (0xC1, false), (0xDF, false), (0xE1, false),
        ]
        for (byte, inAlphabet) in edges {
            let text = [UInt8](repeating: byte, count: 8)
            #expect(text.withUnsafeBufferPointer { Base64URL.isAlphabet($0) } == inAlphabet, "byte \(byte)")
        }
    }
}
