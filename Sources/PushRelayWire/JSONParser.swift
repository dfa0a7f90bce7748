/// The JSON parser: one pass over UTF-8 bytes, no intermediate tokens, strings without escapes taken as one slice.
///
/// Memory-safe (plain `Array` indexing); positions in errors are byte offsets from 0.
struct JSONParser {
    private let bytes: [UInt8]
    private var index: Int = 0
    private var depth: Int = 0
    private let maxDepth: Int
    private let rejectsDuplicateKeys: Bool

    init(bytes: [UInt8], maxDepth: Int, rejectsDuplicateKeys: Bool = false) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.rejectsDuplicateKeys = rejectsDuplicateKeys
    }

    /// Parses the whole input as one value surrounded by optional whitespace.
    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        if index < bytes.count { throw unexpectedCharacter(at: index) }
        return value
    }

    // MARK: Values

    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw JSONParseError(code: .unexpectedEnd, position: index) }
        switch bytes[index] {
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "{"): return .object(try parseObject())
        case UInt8(ascii: "["): return .array(try parseArray())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try parseNumber())
        default:
            throw unexpectedCharacter(at: index)
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        for offset in 0..<count {
            let expected = literal.withUTF8Buffer { $0[offset] }
            guard index < bytes.count else { throw JSONParseError(code: .unexpectedEnd, position: index) }
            guard bytes[index] == expected else { throw unexpectedCharacter(at: index) }
            index += 1
        }
    }

    private mutating func enterContainer() throws(JSONParseError) {
        depth += 1
        if depth > maxDepth { throw JSONParseError(code: .tooDeep, position: index, limit: maxDepth) }
        index += 1
    }

    /// After a member or element: true past a `,` (and the blanks after it), false past the container's `close`;
    /// anything else is an unexpected character.
    @inline(__always)
    private mutating func moreMembers(closedBy close: UInt8) throws(JSONParseError) -> Bool {
        skipWhitespace()
        let next = try peek()
        index += 1
        if next == UInt8(ascii: ",") {
            skipWhitespace()
            return true
        }
        if next == close { return false }
        throw unexpectedCharacter(at: index - 1)
    }

    /// A repeated key replaces the earlier value in place (``JSONObject``'s setter, which also keeps a large
    /// object's keys in a table, so that a hostile object with many keys parses in linear time).
    private mutating func parseObject() throws(JSONParseError) -> JSONObject {
        try enterContainer()
        skipWhitespace()
        var object = JSONObject()
        if try peek() == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return object
        }
        object.reserveCapacity(4)
        while true {
            guard try peek() == UInt8(ascii: "\"") else { throw unexpectedCharacter(at: index) }
            let keyStart = index
            let key = try parseString()
            if rejectsDuplicateKeys, object[key] != nil {
                throw JSONParseError(code: .duplicateKey, position: keyStart, character: key)
            }
            skipWhitespace()
            guard try peek() == UInt8(ascii: ":") else { throw unexpectedCharacter(at: index) }
            index += 1
            skipWhitespace()
            object[key] = try parseValue()
            guard try moreMembers(closedBy: UInt8(ascii: "}")) else { break }
        }
        depth -= 1
        return object
    }

    private mutating func parseArray() throws(JSONParseError) -> [JSONValue] {
        try enterContainer()
        skipWhitespace()
        var elements: [JSONValue] = []
        if try peek() == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return elements
        }
        while true {
            elements.append(try parseValue())
            guard try moreMembers(closedBy: UInt8(ascii: "]")) else { break }
        }
        depth -= 1
        return elements
    }

    // MARK: Numbers

    private mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        let first = try peek()
        if first == UInt8(ascii: "0") {
            index += 1
        } else if Self.isDigit(first) {
            skipDigits()
        } else {
            throw unexpectedCharacter(at: index)
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard Self.isDigit(try peek()) else { throw unexpectedCharacter(at: index) }
            skipDigits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            let sign = try peek()
            if sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { index += 1 }
            guard Self.isDigit(try peek()) else { throw unexpectedCharacter(at: index) }
            skipDigits()
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        return JSONNumber(validatedText: text)
    }

    private mutating func skipDigits() {
        while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    // MARK: Strings

    /// Parses a string starting at its opening quote. The scan runs eight bytes at a time (``firstStopByte(_:from:)``);
    /// text that is all ASCII skips UTF-8 validation.
    private mutating func parseString() throws(JSONParseError) -> String {
        let start = index + 1
        let bytes = self.bytes
        let span = bytes.span
        let (position, nonASCII) = Self.firstStopByte(bytes, from: start)
        guard position < span.count else { throw JSONParseError(code: .unexpectedEnd, position: position) }
        let byte = span[position]
        if byte == UInt8(ascii: "\"") {
            index = position + 1
            let slice = bytes[start..<position]
            if !nonASCII { return String(decoding: slice, as: UTF8.self) }
            return try Self.validatedString(slice, start: start)
        }
        if byte == UInt8(ascii: "\\") {
            index = position
            return try parseEscapedString(start: start)
        }
        throw unexpectedCharacter(at: position)
    }

    /// The position of the first `"`, `\` or control character at or after `start` in a string's contents (the end
    /// of `bytes` when there is none), and whether a byte before it has its high bit set (then the text needs UTF-8
    /// validation). Eight bytes at a time to the last whole word, the first stop byte found in its word by its bit
    /// position, so a short string costs one load instead of a loop over its bytes. The parser's and
    /// ``JSONScanner``'s scan.
    @inline(__always)
    static func firstStopByte(_ bytes: [UInt8], from start: Int) -> (position: Int, nonASCII: Bool) {
        let span = bytes.span
        let raw = span.bytes
        let highs: UInt64 = 0x8080_8080_8080_8080
        var position = start
        var seen: UInt64 = 0
        while position + 8 <= span.count {
            let word = UInt64(littleEndian: raw.unsafeLoadUnaligned(fromByteOffset: position, as: UInt64.self))
            let stops = stopBytes(word)
            if stops != 0 {
                // Byte k of the word (k = 0 first in memory) is flagged by bit 8k + 7.
                let offset = stops.trailingZeroBitCount &>> 3
                seen |= word & ((1 &<< UInt64(offset &* 8)) &- 1)
                return (position + offset, seen & highs != 0)
            }
            seen |= word
            position += 8
        }
        var tail: UInt8 = 0
        while position < span.count {
            let byte = span[position]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            tail |= byte
            position += 1
        }
        return (position, seen & highs != 0 || tail >= 0x80)
    }

    /// The high bit of each byte of `word` that is `"`, `\` or below 0x20 — exact up to the first such byte (the
    /// lowest flagged one); bytes after it may be flagged too (a borrow carries into them), so only the lowest is
    /// read. Zero: none.
    @inline(__always)
    static func stopBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let found = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
        return found & highs
    }

    /// The slow path, from the first backslash: collects bytes with escapes resolved.
    private mutating func parseEscapedString(start: Int) throws(JSONParseError) -> String {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(index - start + 16)
        buffer.append(contentsOf: bytes[start..<index])
        var segmentStart = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                buffer.append(contentsOf: bytes[segmentStart..<index])
                index += 1
                return try Self.validatedString(buffer[...], start: start)
            }
            if byte < 0x20 { throw unexpectedCharacter(at: index) }
            if byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            buffer.append(contentsOf: bytes[segmentStart..<index])
            index += 1
            let escape = try peek()
            index += 1
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): buffer.append(escape)
            case UInt8(ascii: "b"): buffer.append(0x08)
            case UInt8(ascii: "f"): buffer.append(0x0C)
            case UInt8(ascii: "n"): buffer.append(0x0A)
            case UInt8(ascii: "r"): buffer.append(0x0D)
            case UInt8(ascii: "t"): buffer.append(0x09)
            case UInt8(ascii: "u"): try appendUnicodeEscape(to: &buffer)
            default: throw unexpectedCharacter(at: index - 1)
            }
            segmentStart = index
        }
        throw JSONParseError(code: .unexpectedEnd, position: index)
    }

    /// Reads the four hex digits after `\u` (and a second `\uXXXX` for a surrogate pair) and appends UTF-8.
    private mutating func appendUnicodeEscape(to buffer: inout [UInt8]) throws(JSONParseError) {
        let escapeStart = index - 2
        var scalar = try readHex4()
        if scalar >= 0xD800 && scalar < 0xDC00 {
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw JSONParseError(code: .invalidEscape, position: escapeStart) }
            index += 2
            let low = try readHex4()
            guard low >= 0xDC00 && low < 0xE000 else {
                throw JSONParseError(code: .invalidEscape, position: escapeStart)
            }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if scalar >= 0xDC00 && scalar < 0xE000 {
            throw JSONParseError(code: .invalidEscape, position: escapeStart)
        }
        guard let unicode = Unicode.Scalar(scalar) else {
            throw JSONParseError(code: .invalidEscape, position: escapeStart)
        }
        buffer.append(contentsOf: UTF8.encode(unicode)!)
    }

    private mutating func readHex4() throws(JSONParseError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = try peek()
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw unexpectedCharacter(at: index)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// A string from UTF-8 bytes, checked: ASCII is taken as is, other text is validated here (the standard
    /// library's generic validating initializer costs a runtime metadata lookup per call).
    private static func validatedString(_ slice: ArraySlice<UInt8>, start: Int) throws(JSONParseError) -> String {
        if let invalid = firstInvalidUTF8(slice) {
            throw JSONParseError(code: .invalidUTF8, position: start + invalid - slice.startIndex)
        }
        return String(decoding: slice, as: UTF8.self)
    }

    /// The index of the first byte that breaks UTF-8 (RFC 3629: no overlongs, no surrogates, ≤ U+10FFFF), or `nil`.
    static func firstInvalidUTF8(_ bytes: ArraySlice<UInt8>) -> Int? {
        var index = bytes.startIndex
        let end = bytes.endIndex
        while index < end {
            let lead = bytes[index]
            if lead < 0x80 {
                index += 1
                continue
            }
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0:
                length = 3
                low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED:
                length = 3
                high = 0x9F
            case 0xF0:
                length = 4
                low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4:
                length = 4
                high = 0x8F
            default: return index
            }
            guard index + length <= end else { return index }
            let second = bytes[index + 1]
            guard second >= low && second <= high else { return index }
            for offset in 2..<length where bytes[index + offset] & 0xC0 != 0x80 { return index }
            index += length
        }
        return nil
    }

    // MARK: Helpers

    private mutating func skipWhitespace() {
        index = Self.endOfBlanks(bytes, from: index)
    }

    /// The position of the first byte at or after `start` that is not a blank (space, tab, line feed, carriage
    /// return), or the end; eight spaces at a time (pretty-printed JSON indents with runs of them). The parser's and
    /// ``JSONScanner``'s rule.
    @inline(__always)
    static func endOfBlanks(_ bytes: [UInt8], from start: Int) -> Int {
        let span = bytes.span
        var position = start
        let raw = span.bytes
        while position + 8 <= span.count,
            raw.unsafeLoadUnaligned(fromByteOffset: position, as: UInt64.self) == 0x2020_2020_2020_2020
        {
            position += 8
        }
        while position < span.count {
            switch span[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return position
            }
        }
        return position
    }

    /// The byte at the current position, or an end-of-input error.
    private func peek() throws(JSONParseError) -> UInt8 {
        guard index < bytes.count else { throw JSONParseError(code: .unexpectedEnd, position: index) }
        return bytes[index]
    }

    private func unexpectedCharacter(at position: Int) -> JSONParseError {
        guard position < bytes.count else { return JSONParseError(code: .unexpectedEnd, position: position) }
        return JSONParseError(code: .unexpectedCharacter, position: position, character: Self.shown(at: position, in: bytes))
    }

    /// How a byte is shown in an error: printable ASCII as itself, controls escaped, other UTF-8 decoded.
    static func shown(at position: Int, in bytes: [UInt8]) -> String {
        let byte = bytes[position]
        switch byte {
        case 0x20..<0x7F: return String(UnicodeScalar(byte))
        case 0x0A: return "\\n"
        case 0x0D: return "\\r"
        case 0x09: return "\\t"
        case 0..<0x20, 0x7F: return "U+" + hex4(UInt32(byte))
        default:
            var parser = Unicode.UTF8.ForwardParser()
            var iterator = bytes[position...].makeIterator()
            if case .valid(let encoded) = parser.parseScalar(from: &iterator) {
                return String(decoding: Array(encoded), as: UTF8.self)
            }
            return "0x" + String(byte, radix: 16, uppercase: true)
        }
    }

    private static func hex4(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

extension JSONValue {
    /// Parses UTF-8 JSON text (RFC 8259; any value at the top level).
    ///
    /// Errors carry FCM's wording and the byte position: `JSON_PARSING_ERROR: Unexpected character (x) at position 0.`
    /// A repeated object key keeps the last value at the first key's position, unless the limits reject it.
    public static func parse(
        _ bytes: [UInt8],
        limits: JSONParseLimits = .default
    ) throws(JSONParseError) -> JSONValue {
        guard bytes.count <= limits.maxBytes else {
            throw JSONParseError(code: .tooLarge, position: limits.maxBytes, limit: limits.maxBytes)
        }
        var parser = JSONParser(bytes: bytes, maxDepth: limits.maxDepth, rejectsDuplicateKeys: limits.rejectsDuplicateKeys)
        return try parser.parseDocument()
    }

    /// Parses JSON text given as a string.
    public static func parse(_ text: String, limits: JSONParseLimits = .default) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8), limits: limits)
    }
}
