/// ASCII case-insensitive comparisons on UTF-8 bytes, for header values and schemes read on every request:
/// no lowercased copy, no `Character` iteration.
extension StringProtocol {
    /// Whether the text starts with `prefix` (lowercase ASCII), ignoring the case of ASCII letters.
    public func hasPrefixIgnoringASCIICase(_ prefix: StaticString) -> Bool {
        startsIgnoringASCIICase(self.utf8, prefix)
    }

    /// Whether the text is `other` (lowercase ASCII), ignoring the case of ASCII letters.
    public func equalsIgnoringASCIICase(_ other: StaticString) -> Bool {
        self.utf8.count == other.utf8CodeUnitCount && self.hasPrefixIgnoringASCIICase(other)
    }
}

/// Whether `bytes` start with `prefix` (lowercase ASCII), ignoring the case of ASCII letters.
func startsIgnoringASCIICase(_ bytes: some Sequence<UInt8>, _ prefix: StaticString) -> Bool {
    let expected = UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
    return bytes.starts(with: expected) { $0.lowercasedASCII == $1 }
}

extension UInt8 {
    /// A space or a tab: the blanks HTTP allows around header values and parameters.
    var isSpaceOrTab: Bool { self == UInt8(ascii: " ") || self == UInt8(ascii: "\t") }

    /// The byte with an ASCII capital letter made small.
    var lowercasedASCII: UInt8 { self &- UInt8(ascii: "A") < 26 ? self | 0x20 : self }
}

extension Substring {
    /// Without the spaces and tabs at either end (on the UTF-8 bytes: cheap, and the cut is always between scalars).
    func trimmingASCIIWhitespace() -> Substring {
        let bytes = self.utf8
        guard let first = bytes.firstIndex(where: { !$0.isSpaceOrTab }), let last = bytes.lastIndex(where: { !$0.isSpaceOrTab })
        else { return self[self.endIndex...] }
        return self[first..<bytes.index(after: last)]
    }
}