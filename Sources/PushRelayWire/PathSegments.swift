/// A URL path's segments between `/`, found over its UTF-8 bytes. `Collection.split` on a string compares
/// `Character`s — a grapheme-break check per character — and cost a routed request thousands of instructions; `/`
/// is ASCII, so every cut falls on a scalar boundary and the segments are the same substrings of `path`.
public enum PathSegments {
    /// The segments of `path` between `/`; empty ones (`//`, a leading or trailing `/`) kept or not.
    public static func split(_ path: Substring, omittingEmpty: Bool) -> [Substring] {
        var segments: [Substring] = []
        let utf8 = path.utf8
        var start = utf8.startIndex
        var index = start
        while index != utf8.endIndex {
            if utf8[index] == UInt8(ascii: "/") {
                if !omittingEmpty || start != index { segments.append(path[start..<index]) }
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        if !omittingEmpty || start != utf8.endIndex { segments.append(path[start..<utf8.endIndex]) }
        return segments
    }
}
