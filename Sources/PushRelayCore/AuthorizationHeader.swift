/// Reads the credentials out of an `Authorization` header value.
///
/// Both run on every send's head (the route's gate), so they work on the contiguous UTF-8 bytes once: no
/// `Character` iteration, no lowercased or trimmed copies.
public enum AuthorizationHeader {
    /// The server key of `key=<k>` (FCM legacy; the scheme `key` is case-insensitive, spaces around `=` allowed),
    /// or `nil` for any other form or an empty key.
    public static func serverKey(_ value: String) -> Substring? {
        self.slice(value) { bytes in
            let (start, end) = Self.trimmed(bytes, 0, bytes.count)
            guard end - start > 4, startsIgnoringASCIICase(bytes[start...], "key") else { return nil }
            var index = start + 3
            while index < end && bytes[index].isSpaceOrTab { index += 1 }
            guard index < end, bytes[index] == UInt8(ascii: "=") else { return nil }
            let key = Self.trimmed(bytes, index + 1, end)
            return key.0 < key.1 ? key : nil
        }
    }

    /// The token of `Bearer <t>` (scheme case-insensitive, RFC 6750), or `nil` for any other form or an empty token.
    public static func bearer(_ value: String) -> Substring? {
        self.slice(value) { bytes in
            let (start, end) = Self.trimmed(bytes, 0, bytes.count)
            guard end - start > 7, startsIgnoringASCIICase(bytes[start...], "bearer"), bytes[start + 6].isSpaceOrTab
            else { return nil }
            let token = Self.trimmed(bytes, start + 6, end)
            guard token.0 < token.1 else { return nil }
            for index in token.0..<token.1 where bytes[index] == UInt8(ascii: " ") { return nil }
            return token
        }
    }

    /// The part of `value` between the byte offsets `find` returns.
    private static func slice(
        _ value: String, _ find: (UnsafeBufferPointer<UInt8>) -> (Int, Int)?
    ) -> Substring? {
        let utf8 = value.utf8
        let found = utf8.withContiguousStorageIfAvailable(find) ?? Array(utf8).withUnsafeBufferPointer(find)
        guard let (start, end) = found else { return nil }
        // The offsets are next to ASCII bytes (or the ends): scalar boundaries.
        let lower = utf8.index(utf8.startIndex, offsetBy: start)
        return Substring(utf8[lower..<utf8.index(lower, offsetBy: end - start)])
    }

    /// `start..<end` without the spaces and tabs at either end.
    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> (Int, Int) {
        var start = start
        var end = end
        while start < end && bytes[start].isSpaceOrTab { start += 1 }
        while end > start && bytes[end - 1].isSpaceOrTab { end -= 1 }
        return (start, end)
    }
}
