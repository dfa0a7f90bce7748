/// Reads the credentials out of an `Authorization` header value.
public enum AuthorizationHeader {
    /// The server key of `key=<k>` (FCM legacy; the scheme `key` is case-insensitive, spaces around `=` allowed),
    /// or `nil` for any other form or an empty key.
    public static func serverKey(_ value: String) -> Substring? {
        let trimmed = Substring(value).trimmingASCIIWhitespace()
        guard trimmed.utf8.count > 4 else { return nil }
        let scheme = trimmed.prefix(3)
        guard scheme.lowercased() == "key" else { return nil }
        let rest = trimmed.dropFirst(3).trimmingASCIIWhitespace()
        guard rest.first == "=" else { return nil }
        let key = rest.dropFirst().trimmingASCIIWhitespace()
        return key.isEmpty ? nil : key
    }

    /// The token of `Bearer <t>` (scheme case-insensitive, RFC 6750), or `nil` for any other form or an empty token.
    public static func bearer(_ value: String) -> Substring? {
        let trimmed = Substring(value).trimmingASCIIWhitespace()
        guard trimmed.utf8.count > 7, trimmed.prefix(6).lowercased() == "bearer" else { return nil }
        let separator = trimmed.dropFirst(6)
        guard separator.first == " " || separator.first == "\t" else { return nil }
        let token = separator.trimmingASCIIWhitespace()
        return token.isEmpty || token.contains(" ") ? nil : token
    }
}
