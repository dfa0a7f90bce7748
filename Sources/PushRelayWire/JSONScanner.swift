/// A forward reader of JSON text that hands out byte positions instead of values, for a parser that reads one
/// common shape of document without building a ``JSONValue`` tree (the FCM send body, on every send).
///
/// It reads only the plain case: strings without escapes, object keys in ASCII and not repeated, no `null` inside
/// a copied value. Wherever the text is anything else — an escape, a repeated key, a syntax error, nesting deeper
/// than the limit, invalid UTF-8 — a method returns `nil` (or `false`), and the caller gives the whole document to
/// ``JSONValue/parse(_:limits:)``, which reads every case and reports every error. So what this type accepts,
/// that parser accepts too, with the same values: a plain string's bytes are its UTF-8 text, and its escaped form in
/// JSON (``JSONWriter/appendEscaped(_:to:)``) is the same bytes.
///
/// Memory-safe: array and span indexing, and ``withBytes(of:_:)`` lends a buffer only over a range this scanner
/// returned (so within ``bytes``). Positions are byte offsets into ``bytes``.
public struct JSONScanner: Sendable {
    /// The text.
    public let bytes: [UInt8]
    /// The position of the next byte to read.
    public private(set) var index: Int = 0
    private var depth: Int = 0
    private let maxDepth: Int
    /// The keys of the objects being read, innermost last (``beginKeys()``).
    private var keys: [Range<Int>] = []

    /// A scanner at the start of `bytes`; containers nest at most `maxDepth` deep (the outermost is depth 1, as in
    /// ``JSONParseLimits/maxDepth``).
    public init(_ bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { index >= bytes.count }

    /// The next byte, or nil at the end.
    public var next: UInt8? { index < bytes.count ? bytes[index] : nil }

    /// Skips blanks (space, tab, line feed, carriage return).
    @inline(__always)
    public mutating func skipWhitespace() {
        // Most tokens are followed by no blank or by one: look at the next byte before calling the scan.
        guard index < bytes.count, bytes[index] <= 0x20 else { return }
        index = JSONParser.endOfBlanks(bytes, from: index)
    }

    /// Reads `byte` if it is next (no blanks skipped).
    public mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// After a member or an element and the blanks after it: `true` past a `,` (and the blanks after it), `false`
    /// past `close`, nil for anything else.
    public mutating func more(closedBy close: UInt8) -> Bool? {
        skipWhitespace()
        if take(UInt8(ascii: ",")) {
            skipWhitespace()
            return true
        }
        if take(close) {
            depth -= 1
            return false
        }
        return nil
    }

    /// Opens an object or array at `open` (`{` or `[`) and skips the blanks after it: false when the next byte is not
    /// `open` or the container would be too deep.
    public mutating func enter(_ open: UInt8) -> Bool {
        guard depth < maxDepth, take(open) else { return false }
        depth += 1
        skipWhitespace()
        return true
    }

    /// Reads `close` right after ``enter(_:)`` (an empty container); false, reading nothing, otherwise.
    public mutating func closeEmpty(_ close: UInt8) -> Bool {
        guard take(close) else { return false }
        depth -= 1
        return true
    }

    /// Reads `"key":` (blanks around the colon skipped) of an object member whose key is plain ASCII; the key's bytes
    /// without quotes, or nil.
    public mutating func key() -> Range<Int>? {
        guard let (range, isASCII) = plainString(), isASCII else { return nil }
        skipWhitespace()
        guard take(UInt8(ascii: ":")) else { return nil }
        skipWhitespace()
        return range
    }

    /// Reads a plain string (no escapes, valid UTF-8) at `"`: the bytes between the quotes, or nil.
    public mutating func string() -> Range<Int>? {
        plainString()?.range
    }

    /// ``string()``, and whether the string is all ASCII.
    private mutating func plainString() -> (range: Range<Int>, isASCII: Bool)? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        let (position, nonASCII) = JSONParser.firstStopByte(bytes, from: start)
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { return nil }
        index = position + 1
        if nonASCII, JSONParser.firstInvalidUTF8(bytes[start..<position]) != nil { return nil }
        return (start..<position, !nonASCII)
    }

    /// Reads a number (RFC 8259's grammar): its text, or nil.
    public mutating func number() -> Range<Int>? {
        let start = index
        _ = take(UInt8(ascii: "-"))
        if take(UInt8(ascii: "0")) {
        } else if digits() == 0 {
            return nil
        }
        if take(UInt8(ascii: ".")), digits() == 0 { return nil }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            if digits() == 0 { return nil }
        }
        return start..<index
    }

    private mutating func digits() -> Int {
        let start = index
        while index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10 { index += 1 }
        return index - start
    }

    /// Reads `true` or `false`: its value, or nil.
    public mutating func bool() -> Bool? {
        if literal("true") { return true }
        if literal("false") { return false }
        return nil
    }

    /// Reads `null`: whether it was there.
    public mutating func null() -> Bool { literal("null") }

    private mutating func literal(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        let matches = text.withUTF8Buffer { expected in
            for offset in 0..<count where bytes[index + offset] != expected[offset] { return false }
            return true
        }
        if matches { index += count }
        return matches
    }

    /// The most keys one object may have (each key is compared with the ones before it); a larger object is left to
    /// the full parser.
    public static let maxCopiedKeys = 32

    /// Reads any value and appends its compact JSON text (``JSONWriter/append(_:to:)``'s output for the value the
    /// full parser would read) to `buffer`, escaped as the contents of a JSON string
    /// (``JSONWriter/appendEscapedJSON(_:to:)``). Returns the compact text's length before escaping, or nil.
    public mutating func copyEscaped(into buffer: inout [UInt8]) -> Int? {
        let start = index
        guard skipValue() else { return nil }
        // The value is valid and its strings plain (no backslash, no control character): blanks outside strings go,
        // quotes get a backslash, every other byte is copied — a string's contents in one copy (its closing quote is
        // the first stop byte after its opening one), the few bytes between strings one by one.
        let bytes = self.bytes
        var end = index
        while end > start, Self.isBlank(bytes[end - 1]) { end -= 1 }
        var blanks = 0
        var position = start
        while position < end {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let close = JSONParser.firstStopByte(bytes, from: position + 1).position
                buffer.append(UInt8(ascii: "\\"))
                buffer.append(UInt8(ascii: "\""))
                buffer.append(contentsOf: bytes[position + 1..<close])
                buffer.append(UInt8(ascii: "\\"))
                buffer.append(UInt8(ascii: "\""))
                position = close + 1
                continue
            }
            if Self.isBlank(byte) {
                blanks += 1
            } else {
                buffer.append(byte)
            }
            position += 1
        }
        return end - start - blanks
    }

    @inline(__always)
    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    /// Reads any value of the plain case (see the type's description; no `null` either) without keeping it: whether
    /// it was one. Blanks after it are read too.
    public mutating func skipValue() -> Bool {
        guard let first = next else { return false }
        switch first {
        case UInt8(ascii: "\""):
            guard string() != nil else { return false }
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            guard number() != nil else { return false }
        case UInt8(ascii: "t"), UInt8(ascii: "f"):
            guard bool() != nil else { return false }
        case UInt8(ascii: "["):
            guard enter(UInt8(ascii: "[")) else { return false }
            if !closeEmpty(UInt8(ascii: "]")) {
                while true {
                    guard skipValue(), let more = more(closedBy: UInt8(ascii: "]")) else { return false }
                    if !more { break }
                }
            }
        case UInt8(ascii: "{"):
            guard enter(UInt8(ascii: "{")) else { return false }
            if !closeEmpty(UInt8(ascii: "}")) {
                let keys = beginKeys()
                defer { endKeys(keys) }
                while true {
                    guard let key = key(), insertKey(key, after: keys), skipValue(),
                        let more = more(closedBy: UInt8(ascii: "}"))
                    else { return false }
                    if !more { break }
                }
            }
        default:
            // `null` too: a copied value is written as the sender's JSON, and a null in it is rare enough to leave
            // to the full parser rather than to get right twice.
            return false
        }
        skipWhitespace()
        return true
    }

    /// Starts the list of one object's keys, to refuse a repeated one (the full parser keeps the last value at the
    /// first key's place); pass what it returns to ``insertKey(_:after:)`` and ``endKeys(_:)``.
    public mutating func beginKeys() -> Int {
        if keys.capacity == 0 { keys.reserveCapacity(16) }
        return keys.count
    }

    /// Adds `key` to the object's list: false when it is there already (equal bytes: keys are ASCII, where that is
    /// string equality) or the object has ``maxCopiedKeys`` keys already.
    public mutating func insertKey(_ key: Range<Int>, after start: Int) -> Bool {
        guard keys.count - start < Self.maxCopiedKeys else { return false }
        let bytes = self.bytes
        for other in keys[start...] where other.count == key.count && bytes[other] == bytes[key] { return false }
        keys.append(key)
        return true
    }

    /// Ends the object's list.
    public mutating func endKeys(_ start: Int) {
        keys.removeSubrange(start...)
    }

    /// The bytes of `range` as a buffer, for comparisons that must be cheap (field names on every send).
    @inlinable
    public func withBytes<Result>(of range: Range<Int>, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        bytes.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[range])) }
    }

    /// The integer value of number text (``JSONNumber/int64Value``'s rule), or nil.
    public func int64(_ range: Range<Int>) -> Int64? {
        JSONNumber.int64(bytes[range])
    }
}
