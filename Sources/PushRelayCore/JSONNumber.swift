/// A JSON number as written: its text, and its value as `Int64` when it is an integer that fits.
///
/// Keeping the text means `3` stays `3`, `1.50` stays `1.50` and `12345678901234567890` loses no digit when a
/// value is passed through (for example into `gcm.notification.<key>` as JSON text).
public struct JSONNumber: Sendable, Hashable {
    /// The number's JSON text, e.g. `3`, `-0.5`, `1e3`.
    public let text: String
    /// The value, if the text is an integer (no fraction, no exponent) within `Int64`.
    public let int64Value: Int64?

    /// A number from an integer.
    public init(_ value: Int64) {
        self.text = String(value)
        self.int64Value = value
    }

    /// A number from a double. Non-finite values have no JSON form and become `0`.
    public init(_ value: Double) {
        if value.isFinite {
            if let exact = Int64(exactly: value), value.rounded() == value, abs(value) < 1e15 {
                self.text = String(exact)
                self.int64Value = exact
            } else {
                self.text = String(describing: value)
                self.int64Value = nil
            }
        } else {
            self.text = "0"
            self.int64Value = 0
        }
    }

    /// A number from JSON text already checked by the parser.
    init(validatedText text: String, isInteger: Bool) {
        self.text = text
        self.int64Value = isInteger ? Int64(text) : nil
    }

    /// The value as a double (`Double(text)`); large integers round.
    public var doubleValue: Double { Double(text) ?? 0 }

    /// Whether the number is written as an integer (no fraction, no exponent), whatever its size.
    public var isIntegerText: Bool {
        !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") })
    }
}
