/// Writes compact, one-line JSON into a byte array: no spaces, keys in their stored order, strings escaped so that
/// the output never contains a raw control character (in particular no newline, so it fits an SSE `data:` line).
///
/// Non-ASCII text is written as UTF-8, not as `\u` escapes. Hand-built documents (the envelope, the FCM
/// responses) use the `append…` functions directly.
public enum JSONWriter {
    /// Appends `value` as compact JSON.
    public static func append(_ value: JSONValue, to buffer: inout [UInt8]) {
        append(value, escapedTwice: false, to: &buffer)
    }

    /// The byte count of `value`'s compact serialization, computed without writing it.
    public static func serializedCount(_ value: JSONValue) -> Int {
        switch value {
        case .null: return 4
        case .bool(let flag): return flag ? 4 : 5
        case .number(let number): return number.text.utf8.count
        case .string(let string): return 2 + escapedCount(string)
        case .array(let elements):
            var total = 2 + max(0, elements.count - 1)
            for element in elements { total += serializedCount(element) }
            return total
        case .object(let object):
            var total = 2 + max(0, object.count - 1)
            for member in object.entries { total += 3 + escapedCount(member.key) + serializedCount(member.value) }
            return total
        }
    }

    /// The byte count of `string`'s escaped contents (without quotes).
    public static func escapedCount(_ string: String) -> Int {
        let utf8 = string.utf8
        let span = utf8.span
        var total = span.count
        for i in span.indices {
            let byte = span[i]
            guard needsEscape(byte) else { continue }
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x0A, 0x0D, 0x09, 0x08, 0x0C: total += 1
            default: total += 5
            }
        }
        return total
    }

    /// Appends `string` as a quoted, escaped JSON string.
    public static func appendString(_ string: String, to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\""))
        appendEscaped(string, to: &buffer)
        buffer.append(UInt8(ascii: "\""))
    }

    /// Appends the escaped contents of `string` without quotes (`"` → `\"`, `\` → `\\`, controls → `\n`, `\u0001`…).
    /// Runs of bytes that need no escape are copied in one go.
    public static func appendEscaped(_ string: String, to buffer: inout [UInt8]) {
        let utf8 = string.utf8
        let span = utf8.span
        if isClean(span) {
            buffer.append(contentsOf: utf8)
            return
        }
        var scratch: [UInt8] = []
        scratch.reserveCapacity(span.count)
        for i in span.indices { scratch.append(span[i]) }
        appendEscaped(bytes: scratch, to: &buffer)
    }

    /// Appends UTF-8 bytes escaped as the contents of a JSON string (for JSON text nested in a string value).
    /// Runs of bytes that need no escape are copied in one go.
    public static func appendEscaped(bytes: [UInt8], to buffer: inout [UInt8]) {
        let span = bytes.span
        buffer.reserveCapacity(buffer.count + span.count + 16)
        var runStart = 0
        var index = 0
        while index < span.count {
            let byte = span[index]
            if needsEscape(byte) {
                if runStart < index { buffer.append(contentsOf: bytes[runStart..<index]) }
                appendEscapedByte(byte, to: &buffer)
                runStart = index + 1
            }
            index += 1
        }
        if runStart < span.count { buffer.append(contentsOf: bytes[runStart..<span.count]) }
    }

    /// Appends the compact JSON text of `value` already escaped as the contents of a JSON string, in one pass:
    /// `{"a":"x"}` is written as `{\"a\":\"x\"}`. The result equals escaping ``append(_:to:)``'s output.
    public static func appendEscapedJSON(_ value: JSONValue, to buffer: inout [UInt8]) {
        append(value, escapedTwice: true, to: &buffer)
    }

    /// The one walk behind ``append(_:to:)`` and ``appendEscapedJSON(_:to:)``: only strings and keys differ
    /// (punctuation, numbers and literals need no escaping in a JSON string).
    private static func append(_ value: JSONValue, escapedTwice: Bool, to buffer: inout [UInt8]) {
        switch value {
        case .null: appendRaw("null", to: &buffer)
        case .bool(let flag): appendRaw(flag ? "true" : "false", to: &buffer)
        case .number(let number): buffer.append(contentsOf: number.text.utf8)
        case .string(let string): appendString(string, escapedTwice: escapedTwice, to: &buffer)
        case .array(let elements):
            buffer.append(UInt8(ascii: "["))
            var isFirst = true
            for element in elements {
                if !isFirst { buffer.append(UInt8(ascii: ",")) }
                isFirst = false
                append(element, escapedTwice: escapedTwice, to: &buffer)
            }
            buffer.append(UInt8(ascii: "]"))
        case .object(let object):
            buffer.append(UInt8(ascii: "{"))
            var isFirst = true
            for member in object.entries {
                if !isFirst { buffer.append(UInt8(ascii: ",")) }
                isFirst = false
                appendString(member.key, escapedTwice: escapedTwice, to: &buffer)
                buffer.append(UInt8(ascii: ":"))
                append(member.value, escapedTwice: escapedTwice, to: &buffer)
            }
            buffer.append(UInt8(ascii: "}"))
        }
    }

    @inline(__always)
    private static func appendString(_ string: String, escapedTwice: Bool, to buffer: inout [UInt8]) {
        if escapedTwice {
            appendDoublyEscapedString(string, to: &buffer)
        } else {
            appendString(string, to: &buffer)
        }
    }

    /// `\"` + the string escaped twice + `\"`.
    private static func appendDoublyEscapedString(_ string: String, to buffer: inout [UInt8]) {
        appendRaw("\\\"", to: &buffer)
        let utf8 = string.utf8
        if !isClean(utf8.span) {
            var once: [UInt8] = []
            appendEscaped(string, to: &once)
            appendEscaped(bytes: once, to: &buffer)
        } else {
            buffer.append(contentsOf: utf8)
        }
        appendRaw("\\\"", to: &buffer)
    }

    @inline(__always)
    private static func appendEscapedByte(_ byte: UInt8, to buffer: inout [UInt8]) {
        guard needsEscape(byte) else {
            buffer.append(byte)
            return
        }
        buffer.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""): buffer.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): buffer.append(UInt8(ascii: "\\"))
        case 0x0A: buffer.append(UInt8(ascii: "n"))
        case 0x0D: buffer.append(UInt8(ascii: "r"))
        case 0x09: buffer.append(UInt8(ascii: "t"))
        case 0x08: buffer.append(UInt8(ascii: "b"))
        case 0x0C: buffer.append(UInt8(ascii: "f"))
        default:
            buffer.append(UInt8(ascii: "u"))
            buffer.append(UInt8(ascii: "0"))
            buffer.append(UInt8(ascii: "0"))
            buffer.append(hexDigit(byte >> 4))
            buffer.append(hexDigit(byte & 0xF))
        }
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    /// Appends ASCII text as it is (for punctuation and literals the caller knows need no escaping). A few bytes are
    /// appended one by one (a bulk append's checks and copy cost more than they do), longer text in one copy.
    @inlinable
    public static func appendRaw(_ text: StaticString, to buffer: inout [UInt8]) {
        text.withUTF8Buffer { bytes in
            if bytes.count <= 4 {
                for byte in bytes { buffer.append(byte) }
            } else {
                buffer.append(contentsOf: bytes)
            }
        }
    }

    /// Appends a decimal unsigned integer (no allocation).
    public static func appendDecimal(_ value: UInt64, to buffer: inout [UInt8]) {
        // One digit (an answer's counts, most small numbers of a body): one append, without the stack buffer.
        if value < 10 {
            buffer.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value))
            return
        }
        // The digits are made on the stack, last first, and appended in one go (UInt64.max has 20): a message id
        // written digit by digit into the array paid a bounds and uniqueness check per digit.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var position = digits.count
            var remaining = value
            repeat {
                position -= 1
                digits[position] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            } while remaining > 0
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: digits[position...]))
        }
    }

    /// Appends a decimal signed integer.
    public static func appendDecimal(_ value: Int64, to buffer: inout [UInt8]) {
        if value < 0 { buffer.append(UInt8(ascii: "-")) }
        appendDecimal(value.magnitude, to: &buffer)
    }

    /// Whether no byte needs an escape; eight bytes at a time.
    @inline(__always)
    private static func isClean(_ span: Span<UInt8>) -> Bool {
        let raw = span.bytes
        var index = 0
        while index + 8 <= span.count {
            let word = raw.unsafeLoadUnaligned(fromByteOffset: index, as: UInt64.self)
            if JSONParser.stopBytes(word) != 0 { return false }
            index += 8
        }
        while index < span.count {
            if needsEscape(span[index]) { return false }
            index += 1
        }
        return true
    }

    @inline(__always)
    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }
}

extension JSONValue {
    /// Compact one-line JSON as UTF-8 bytes.
    public func serialized() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(128)
        JSONWriter.append(self, to: &buffer)
        return buffer
    }

    /// Compact one-line JSON as a string.
    public func serializedString() -> String {
        String(decoding: serialized(), as: UTF8.self)
    }

    /// Appends compact one-line JSON to `buffer`.
    public func write(into buffer: inout [UInt8]) {
        JSONWriter.append(self, to: &buffer)
    }
}
