/// Reads the credentials out of an `Authorization` header value.
///
/// Both run on every send's head (the route's gate), so they work on the UTF-8 bytes: no `Character` iteration, no
/// lowercased copies.
public enum AuthorizationHeader {
    /// The server key of `key=<k>` (FCM legacy; the scheme `key` is case-insensitive, spaces around `=` allowed),
    /// or `nil` for any other form or an empty key.
    public static func serverKey(_ value: String) -> Substring? {
        let trimmed = Substring(value).trimmingASCIIWhitespace()
        guard trimmed.utf8.count > 4, trimmed.hasPrefixIgnoringASCIICase("key") else { return nil }
        let rest = trimmed.utf8.dropFirst(3)
        guard let equals = rest.firstIndex(where: { !$0.isSpaceOrTab }), rest[equals] == UInt8(ascii: "=") else {
            return nil
        }
        let key = trimmed[trimmed.utf8.index(after: equals)...].trimmingASCIIWhitespace()
        return key.isEmpty ? nil : key
    }

    /// The token of `Bearer <t>` (scheme case-insensitive, RFC 6750), or `nil` for any other form or an empty token.
    public static func bearer(_ value: String) -> Substring? {
        let trimmed = Substring(value).trimmingASCIIWhitespace()
        guard trimmed.utf8.count > 7, trimmed.hasPrefixIgnoringASCIICase("bearer") else { return nil }
        let separator = trimmed.utf8.index(trimmed.startIndex, offsetBy: 6)
        guard trimmed.utf8[separator].isSpaceOrTab else { return nil }
        let token = trimmed[separator...].trimmingASCIIWhitespace()
        return token.isEmpty || token.utf8.contains(UInt8(ascii: " ")) ? nil : token
    }
}
