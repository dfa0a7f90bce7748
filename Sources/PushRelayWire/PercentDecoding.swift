/// Percent-decoding (RFC 3986 §2.1) for query strings, form bodies (`application/x-www-form-urlencoded`, where `+`
/// is a space) and path segments (where `+` stays a plus). The project's one decoder.
public enum PercentDecoding {
    /// How `+` reads.
    public enum Plus: Sendable {
        /// `+` is a space: query strings and form bodies.
        case space
        /// `+` is a plus: path segments.
        case plus
    }

    /// Decodes `%XX` escapes (and `+` as `plus` says); `nil` for a bad escape or bytes that are not UTF-8.
    public static func decode(_ bytes: some Collection<UInt8>, plus: Plus) -> String? {
        let plusByte = UInt8(ascii: "+")
        let percent = UInt8(ascii: "%")
        if !bytes.contains(where: { $0 == percent || ($0 == plusByte && plus == .space) }) {
            return String(validating: bytes, as: UTF8.self)
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case plusByte where plus == .space:
                output.append(UInt8(ascii: " "))
            case percent:
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                output.append(high << 4 | low)
            default:
                output.append(byte)
            }
        }
        return String(validating: output, as: UTF8.self)
    }

    /// Decodes `text`'s UTF-8 bytes; see ``decode(_:plus:)-(Collection<UInt8>,_)``.
    public static func decode(_ text: some StringProtocol, plus: Plus) -> String? {
        decode(text.utf8, plus: plus)
    }

    /// `path` in RFC 3986's normal form for comparison (§6.2.2): escapes of unreserved characters (letters, digits,
    /// `-`, `.`, `_`, `~`) decoded, the hex digits of every other escape in upper case. `nil` when `path` has a bad
    /// escape (it is compared as it is) or is already normal.
    public static func normalizedPath(_ path: some StringProtocol) -> String? {
        let percent = UInt8(ascii: "%")
        var output: [UInt8] = []
        output.reserveCapacity(path.utf8.count)
        var changed = false
        var iterator = path.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == percent else {
                output.append(byte)
                continue
            }
            guard let high = iterator.next(), let low = iterator.next(),
                let highValue = hexValue(high), let lowValue = hexValue(low)
            else { return nil }
            let decoded = highValue << 4 | lowValue
            if isUnreserved(decoded) {
                output.append(decoded)
                changed = true
            } else {
                let upperHigh = upperHex(high)
                let upperLow = upperHex(low)
                changed = changed || upperHigh != high || upperLow != low
                output.append(contentsOf: [percent, upperHigh, upperLow])
            }
        }
        return changed ? String(decoding: output, as: UTF8.self) : nil
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    private static func upperHex(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte) ? byte - 32 : byte
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? { byte.hexDigitValue }
}

extension UInt8 {
    /// The value of this byte as a hexadecimal digit (`0`–`9`, `a`–`f`, `A`–`F`), or nil: what percent-decoding and
    /// HTTP/1.1 chunk sizes read.
    @inlinable
    public var hexDigitValue: UInt8? {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): self - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): self - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): self - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
