/// Writes compact, one-line JSON into a byte array: no spaces, keys in their stored order, strings escaped so that
/// the output never contains a raw control character (in particular no newline, so it fits an SSE `data:` line).
///
/// Non-ASCII text is written as UTF-8, not as `\u` escapes. Hand-built documents (the envelope, the FCM
/// responses) use the `append…` functions directly.
public enum JSONWriter {
    /// Appends `value` as compact JSON.
    public static func append(_ value: JSONValue, to buffer: inout [UInt8]) {
        switch value {
        case .null: appendRaw("null", to: &buffer)
        case .bool(let flag): appendRaw(flag ? "true" : "false", to: &buffer)
        case .number(let number): buffer.append(contentsOf: number.text.utf8)
        case .string(let string): appendString(string, to: &buffer)
        case .array(let elements):
            buffer.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { buffer.append(UInt8(ascii: ",")) }
                append(element, to: &buffer)
            }
            buffer.append(UInt8(ascii: "]"))
        case .object(let object):
            buffer.append(UInt8(ascii: "{"))
            for (i, entry) in object.entries.enumerated() {
                if i > 0 { buffer.append(UInt8(ascii: ",")) }
                appendString(entry.key, to: &buffer)
                buffer.append(UInt8(ascii: ":"))
                append(entry.value, to: &buffer)
            }
            buffer.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `string` as a quoted, escaped JSON string.
    public static func appendString(_ string: String, to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\""))
        appendEscaped(string, to: &buffer)
        buffer.append(UInt8(ascii: "\""))
    }

    /// Appends the escaped contents of `string` without quotes (`"` → `\"`, `\` → `\\`, controls → `\n`, `\u0001`…).
    public static func appendEscaped(_ string: String, to buffer: inout [UInt8]) {
        let utf8 = string.utf8
        if !utf8.contains(where: needsEscape) {
            buffer.append(contentsOf: utf8)
            return
        }
        for byte in utf8 {
            guard needsEscape(byte) else {
                buffer.append(byte)
                continue
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
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                buffer.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                buffer.append(hex[Int(byte >> 4)])
                buffer.append(hex[Int(byte & 0xF)])
            }
        }
    }

    /// Appends ASCII text as it is (for punctuation and literals the caller knows need no escaping).
    public static func appendRaw(_ text: StaticString, to buffer: inout [UInt8]) {
        text.withUTF8Buffer { buffer.append(contentsOf: $0) }
    }

    /// Appends a decimal unsigned integer (no allocation).
    public static func appendDecimal(_ value: UInt64, to buffer: inout [UInt8]) {
        var count = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            count += 1
        }
        let start = buffer.count
        buffer.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: count))
        var remaining = value
        var position = start + count
        repeat {
            position -= 1
            buffer[position] = UInt8(ascii: "0") + UInt8(remaining % 10)
            remaining /= 10
        } while remaining > 0
    }

    /// Appends a decimal signed integer.
    public static func appendDecimal(_ value: Int64, to buffer: inout [UInt8]) {
        if value < 0 { buffer.append(UInt8(ascii: "-")) }
        appendDecimal(value.magnitude, to: &buffer)
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
