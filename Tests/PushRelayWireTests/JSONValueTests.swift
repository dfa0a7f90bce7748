import PushRelayWire
import Testing

@Suite("JSON parser and writer")
struct JSONValueTests {
    private func parse(_ text: String, limits: JSONParseLimits = .default) throws(JSONParseError) -> JSONValue {
        try JSONValue.parse(text, limits: limits)
    }

    private func error(_ text: String, limits: JSONParseLimits = .default) -> JSONParseError? {
        do {
            _ = try parse(text, limits: limits)
            return nil
        } catch {
            return error
        }
    }

    @Test func scalars() throws {
        #expect(try parse("null") == .null)
        #expect(try parse(" true ") == .bool(true))
        #expect(try parse("false") == .bool(false))
        #expect(try parse("\"x\"") == .string("x"))
        #expect(try parse("[]") == .array([]))
        #expect(try parse("{}") == .object(JSONObject()))
    }

    /// Strings are scanned eight bytes at a time, the stop byte found by its place in its word: every byte value at
    /// every place of a word and of the tail must read as a byte-by-byte reading would, in the parser and in the
    /// scanner (``JSONScanner/string()``), and a byte with its high bit set before the closing quote must send the
    /// text to UTF-8 validation wherever it is.
    @Test("every byte at every place of a string reads as one byte at a time would, in the parser and the scanner")
    func stringBytesAtEveryPlace() {
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
        let filler = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        for length in [1, 2, 7, 8, 9, 15, 16, 17, 23] {
            for place in 0..<length {
                for byte in UInt8.min...UInt8.max where byte != backslash {
                    var body = Array(filler.prefix(length))
                    body[place] = byte
                    let text = [quote] + body + [quote]
                    let plain = byte >= 0x20 && byte < 0x80 && byte != quote
                    let parsed = try? JSONValue.parse(text)
                    #expect(parsed == (plain ? .string(String(decoding: body, as: UTF8.self)) : nil),
                        "byte \(byte) at \(place) of \(length)")
                    var scanner = JSONScanner(text, maxDepth: 4)
                    let range = scanner.string()
                    let expected: Range<Int>? = plain ? 1..<length + 1 : (byte == quote ? 1..<place + 1 : nil)
                    #expect(range == expected, "scanner: byte \(byte) at \(place) of \(length)")
                }
                // A valid two-byte character there is read (validated), its lead byte alone is not.
                var body = Array(filler.prefix(length + 1))
                body.replaceSubrange(place..<place + 2, with: [0xC3, 0xA9])
                #expect((try? JSONValue.parse([quote] + body + [quote])) == .string(String(decoding: body, as: UTF8.self)))
                var scanner = JSONScanner([quote] + body + [quote], maxDepth: 4)
                #expect(scanner.string() == 1..<body.count + 1)
                body[place + 1] = UInt8(ascii: "x")
                #expect((try? JSONValue.parse([quote] + body + [quote])) == nil, "lone lead byte at \(place)")
                var refused = JSONScanner([quote] + body + [quote], maxDepth: 4)
                #expect(refused.string() == nil, "scanner: lone lead byte at \(place)")
            }
        }
        // A high byte after the closing quote, in the same word, is not the string's.
        var scanner = JSONScanner(Array(#""ab","é""#.utf8), maxDepth: 4)
        #expect(scanner.string() == 1..<3)
    }

    @Test func objectsKeepKeyOrder() throws {
        let value = try parse(#"{"z":1,"a":2,"m":{"y":true,"b":null}}"#)
        #expect(value.objectValue?.keys == ["z", "a", "m"])
        #expect(value["m"]?.objectValue?.keys == ["y", "b"])
        #expect(value.serializedString() == #"{"z":1,"a":2,"m":{"y":true,"b":null}}"#)
    }

    @Test func repeatedKeyKeepsLastValueAtFirstPosition() throws {
        #expect(try parse(#"{"a":1,"b":2,"a":3}"#).serializedString() == #"{"a":3,"b":2}"#)
        // Past 16 members the parser switches to a hash table; the rule stays the same.
        let many = (0..<20).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        let value = try parse("{\(many),\"k3\":99}")
        #expect(value.objectValue?.count == 20)
        #expect(value["k3"] == 99)
        #expect(value.objectValue?.keys[3] == "k3")
    }

    /// Past ``JSONObject/indexThreshold`` members an object finds keys through a table (what keeps a body of
    /// thousands of keys linear to build): every operation must answer as the scan did, removal included.
    @Test func largeObjectsAnswerAsSmallOnes() {
        var object = JSONObject()
        for i in 0..<40 { object["k\(i)"] = .integer(Int64(i)) }
        #expect(object.count == 40)
        #expect(object["k0"] == 0 && object["k15"] == 15 && object["k16"] == 16 && object["k39"] == 39)
        #expect(object["k40"] == nil)
        object["k20"] = "replaced"
        #expect(object.keys[20] == "k20" && object["k20"] == "replaced" && object.count == 40)
        object["k5"] = nil
        #expect(object.count == 39 && object["k5"] == nil)
        #expect(object["k6"] == 6 && object.keys[5] == "k6", "positions after a removal moved down")
        object["k39"] = 390
        #expect(object["k39"] == 390 && object.keys.last == "k39")
        object["new"] = true
        #expect(object.keys.last == "new" && object["new"] == true && object.count == 40)
        for i in 0..<40 where i != 5 && i != 20 && i != 39 { object["k\(i)"] = nil }
        #expect(object.keys == ["k20", "k39", "new"], "small again: found by the scan")
        #expect(object["k39"] == 390 && object["k20"] == "replaced")
        // Equality and hashing look at the members only, however the object was built.
        var built = JSONObject()
        built["k20"] = "replaced"
        built["k39"] = 390
        built["new"] = true
        #expect(built == object && built.hashValue == object.hashValue)
    }

    @Test(arguments: [
        ("0", Int64(0)), ("-0", Int64(0)), ("42", Int64(42)), ("-17", Int64(-17)),
        ("9223372036854775807", Int64.max), ("-9223372036854775808", Int64.min),
    ])
    func integers(text: String, value: Int64) throws {
        let number = try #require(try parse(text).numberValue)
        #expect(number.int64Value == value)
        #expect(number.text == text)
    }

    @Test func numbersKeepTheirText() throws {
        for text in ["1.5", "-0.25", "1e3", "2E-7", "1.0", "12345678901234567890", "-9223372036854775809"] {
            let number = try #require(try parse(text).numberValue)
            #expect(number.text == text)
            #expect(number.int64Value == nil)
            #expect(try parse(text).serializedString() == text)
        }
        #expect(try parse("1.5").numberValue?.doubleValue == 1.5)
        #expect(try parse("[1e2]").serializedString() == "[1e2]")
    }

    @Test(arguments: ["01", "-", "1.", ".5", "1e", "1e+", "+1", "0x10", "--1", "1.e3"])
    func malformedNumbers(text: String) {
        #expect(error(text) != nil)
    }

    @Test func escapes() throws {
        #expect(try parse(#""a\"b\\c\/d\b\f\n\r\t""#) == .string("a\"b\\c/d\u{8}\u{C}\n\r\t"))
        #expect(try parse(#""\u00e9\u4E2D""#) == .string("é中"))
        #expect(try parse(#""\u0000""#) == .string("\u{0}"))
    }

    @Test func surrogatePairs() throws {
        #expect(try parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try parse(#""x\uD834\uDD1Ey""#) == .string("x𝄞y"))
    }

    @Test(arguments: [#""\ud83d""#, #""\ud83dx""#, #""\ude00""#, #""\ud83d\u0041""#])
    func loneSurrogatesAreRefused(text: String) {
        #expect(error(text)?.code == .invalidEscape)
    }

    @Test func rawUTF8IsKept() throws {
        #expect(try parse("\"Provedor de Mensagens — ação ✓ 😀\"") == .string("Provedor de Mensagens — ação ✓ 😀"))
    }

    @Test func invalidUTF8IsRefusedWithItsPosition() {
        for (bytes, position) in [
            ([0x22, 0x61, 0xFF, 0x22] as [UInt8], 2), ([0x22, 0xC3, 0x22], 1), ([0x22, 0xED, 0xA0, 0x80, 0x22], 1),
            ([0x22, 0xC0, 0xAF, 0x22], 1), ([0x22, 0x61, 0x62, 0xF4, 0x90, 0x80, 0x80, 0x22], 3),
        ] {
            #expect(throws: JSONParseError.self) { try JSONValue.parse(bytes) }
            do {
                _ = try JSONValue.parse(bytes)
            } catch {
                #expect(error.code == .invalidUTF8)
                #expect(error.position == position)
            }
        }
    }

    @Test func fcmStyleMessages() {
        #expect(error("x")?.message == "JSON_PARSING_ERROR: Unexpected character (x) at position 0.")
        #expect(error(#"{"a":1,}"#)?.message == "JSON_PARSING_ERROR: Unexpected character (}) at position 7.")
        #expect(error(#"{"a" 1}"#)?.message == "JSON_PARSING_ERROR: Unexpected character (1) at position 5.")
        #expect(error("")?.message == "JSON_PARSING_ERROR: Unexpected end of input at position 0.")
        #expect(error(#"{"a":"#)?.message == "JSON_PARSING_ERROR: Unexpected end of input at position 5.")
        #expect(error("[1] x")?.message == "JSON_PARSING_ERROR: Unexpected character (x) at position 4.")
        #expect(error("tru")?.message == "JSON_PARSING_ERROR: Unexpected end of input at position 3.")
        #expect(error("nul!")?.message == "JSON_PARSING_ERROR: Unexpected character (!) at position 3.")
        #expect(error("\"a\nb\"")?.message == "JSON_PARSING_ERROR: Unexpected character (\\n) at position 2.")
        #expect(error("\"\u{1}\"")?.message == "JSON_PARSING_ERROR: Unexpected character (U+0001) at position 1.")
        #expect(error("é")?.message == "JSON_PARSING_ERROR: Unexpected character (é) at position 0.")
        #expect(error(#""\x""#)?.message == "JSON_PARSING_ERROR: Unexpected character (x) at position 2.")
        #expect(error(#""\u12G4""#)?.message == "JSON_PARSING_ERROR: Unexpected character (G) at position 5.")
        #expect(error(#""\ud83d""#)?.message == "JSON_PARSING_ERROR: Invalid escape sequence at position 1.")
    }

    @Test func nestingLimit() throws {
        let limits = JSONParseLimits(maxDepth: 8)
        let ok = String(repeating: "[", count: 8) + String(repeating: "]", count: 8)
        #expect(try parse(ok, limits: limits).arrayValue != nil)
        let deep = String(repeating: "[", count: 9) + String(repeating: "]", count: 9)
        let failure = error(deep, limits: limits)
        #expect(failure?.code == .tooDeep)
        #expect(failure?.message == "JSON_PARSING_ERROR: Nesting deeper than 8 levels at position 8.")
        // The default limit stops hostile depth long before the stack would.
        let hostile = String(repeating: "{\"a\":", count: 100_000)
        #expect(error(hostile)?.code == .tooDeep)
    }

    @Test func duplicateKeysLastWinsUnlessRefused() throws {
        #expect(try parse(#"{"a":1,"a":2}"#) == ["a": 2])
        let refused = error(#"{"b":{"a":1,"a":2}}"#, limits: .v1)
        #expect(refused?.code == .duplicateKey && refused?.position == 12, "\(String(describing: refused))")
        #expect(refused?.message == #"JSON_PARSING_ERROR: Duplicate field "a" at position 12."#)
        #expect(error(#"{"a":{"a":1}}"#, limits: .v1) == nil, "the same key in another object is no duplicate")
    }

    @Test func sizeLimit() {
        let limits = JSONParseLimits(maxBytes: 10)
        #expect(error("[1,2,3,4,5]", limits: limits)?.code == .tooLarge)
        #expect(error("[1,2,3,4]", limits: limits) == nil)
    }

    @Test func writerEscapesAndStaysOnOneLine() {
        let value: JSONValue = ["k\"ey": "line1\nline2\r\t\u{1}\u{1F}\\/é😀"]
        let text = value.serializedString()
        #expect(text == #"{"k\"ey":"line1\nline2\r\t\u0001\u001f\\/é😀"}"#)
        #expect(!text.contains("\n"))
        #expect((try? JSONValue.parse(text)) == value)
    }

    @Test func roundTrip() throws {
        let text = #"{"a":[1,-2.5,"x",true,false,null,{}],"b":{"c":[]},"d":"\u0007"}"#
        let value = try parse(text)
        #expect(value.serializedString() == text)
        #expect(try parse(value.serializedString()) == value)
    }

    @Test func escapedJSONMatchesEscapingTheText() {
        let value: JSONValue = ["a": "q\"uote\\ \n", "b": [1, true, nil, "é"], "c": ["d": 2]]
        var once: [UInt8] = []
        JSONWriter.appendEscaped(bytes: value.serialized(), to: &once)
        var direct: [UInt8] = []
        JSONWriter.appendEscapedJSON(value, to: &direct)
        #expect(direct == once)
    }

    @Test func decimals() {
        for value: UInt64 in [0, 7, 10, 99, 1_603_214_613_006_763, .max] {
            var buffer: [UInt8] = []
            JSONWriter.appendDecimal(value, to: &buffer)
            #expect(String(decoding: buffer, as: UTF8.self) == String(value))
        }
        var buffer: [UInt8] = []
        JSONWriter.appendDecimal(Int64.min, to: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == String(Int64.min))
        var after = Array("id:".utf8)
        JSONWriter.appendDecimal(UInt64(42), to: &after)
        #expect(String(decoding: after, as: UTF8.self) == "id:42", "appended after what the buffer holds")
    }

    @Test func numberFromDouble() {
        #expect(JSONNumber(3.0).text == "3")
        #expect(JSONNumber(0.5).text == "0.5")
        #expect(JSONNumber(Double.nan).text == "0")
    }

    @Test func stringOrJSONText() {
        #expect(JSONValue.string("a\"b").stringOrJSONText == "a\"b")
        #expect(JSONValue.integer(3).stringOrJSONText == "3")
        #expect(JSONValue(dictionaryLiteral: ("x", [1, 2])).stringOrJSONText == #"{"x":[1,2]}"#)
    }
}

@Suite("JSON writer sizes")
struct JSONWriterCountTests {
    @Test func serializedCountMatchesTheOutput() throws {
        for text in [
            #"{"a":[1,-2.5,"x",true,false,null,{}],"b":{"c":[]},"d":"\u0007\n\"é😀"}"#, "[]", "{}", "\"\"", "0",
            #"{"k\"ey":"v\\"}"#,
        ] {
            let value = try JSONValue.parse(text)
            #expect(JSONWriter.serializedCount(value) == value.serialized().count, "\(text)")
        }
    }
}
