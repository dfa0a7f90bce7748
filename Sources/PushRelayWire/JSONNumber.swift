/// A JSON number as written: its text, with its value as `Int64` when it is an integer that fits.
///
/// Keeping the text means `3` stays `3`, `1.50` stays `1.50` and `12345678901234567890` loses no digit when a
/// value is passed through (for example into `gcm.notification.<key>` as JSON text). Only the text is stored
/// (numbers up to 15 characters need no allocation), so a ``JSONValue`` stays small.
public struct JSONNumber: Sendable, Hashable {
    /// The number's JSON text, e.g. `3`, `-0.5`, `1e3`.
    public let text: String

    /// A number from an integer.
    public init(_ value: Int64) {
        self.text = String(value)
    }

    /// A number from a double. Non-finite values have no JSON form and become `0`.
    public init(_ value: Double) {
        if !value.isFinite {
            self.text = "0"
        } else if value.rounded() == value, abs(value) < 1e15, let exact = Int64(exactly: value) {
            self.text = String(exact)
        } else {
            self.text = String(describing: value)
        }
    }

    /// A number from JSON text already checked by the parser.
    init(validatedText text: String) {
        self.text = text
    }

    /// The value, if the text is an integer (no fraction, no exponent) within `Int64`.
    public var int64Value: Int64? {
        var text = text
        return text.withUTF8 { Self.int64($0) }
    }

    /// ``int64Value``'s rule over number text's bytes (for readers that keep positions, ``JSONScanner``).
    static func int64(_ bytes: some RandomAccessCollection<UInt8>) -> Int64? {
        guard let first = bytes.first else { return nil }
        let negative = first == UInt8(ascii: "-")
        var index = bytes.startIndex
        if negative { index = bytes.index(after: index) }
        guard index < bytes.endIndex else { return nil }
        var value: Int64 = 0
        while index < bytes.endIndex {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) =
                negative
                ? times10.subtractingReportingOverflow(Int64(digit)) : times10.addingReportingOverflow(Int64(digit))
            if overflow1 || overflow2 { return nil }
            value = next
            index = bytes.index(after: index)
        }
        return value
    }

    /// The value as a double (`Double(text)`); large integers round.
    public var doubleValue: Double { Double(text) ?? 0 }

    /// Whether the number is written as an integer (no fraction, no exponent), whatever its size.
    public var isIntegerText: Bool {
        !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") })
    }
}
