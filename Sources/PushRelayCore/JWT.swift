public import PushRelayWire

/// A compact-serialized JSON Web Token (RFC 7519) split into its parts, before its signature is checked.
///
/// Parsing checks the form only (three base64url segments, JSON objects in the first two); the signature is
/// checked by the caller against ``signingInput`` with the key the header's `kid` names (the crypto layer does RSA),
/// and the claims by ``ServiceAccountGrant``.
public struct JWT: Sendable, Hashable {
    /// The decoded header (`alg`, `typ`, `kid`).
    public var header: JSONObject
    /// The decoded claims.
    public var claims: JSONObject
    /// The bytes that were signed: the first two segments with their dot, as sent.
    public var signingInput: [UInt8]
    /// The decoded signature.
    public var signature: [UInt8]

    /// `alg` of the header.
    public var algorithm: String? { header["alg"]?.stringValue }
    /// `kid` of the header: the service account's `private_key_id`.
    public var keyID: String? { header["kid"]?.stringValue }

    /// Splits and decodes a JWT; throws `invalid_request` for anything that is not one (the text of
    /// Google's token endpoint is kept: `Invalid JWT: …`). At most 16 KiB.
    public static func parse(_ text: String) throws(OAuthError) -> JWT {
        guard text.utf8.count <= 16 * 1024 else { throw .invalidRequest("Invalid JWT: too long") }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .invalidRequest("Invalid JWT: not three dot-separated segments") }
        guard let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { throw .invalidRequest("Invalid JWT: a segment is not base64url") }
        guard let header = (try? JSONValue.parse(headerBytes))?.objectValue else {
            throw .invalidRequest("Invalid JWT: the header is not a JSON object")
        }
        guard let claims = (try? JSONValue.parse(claimBytes))?.objectValue else {
            throw .invalidRequest("Invalid JWT: the claim set is not a JSON object")
        }
        return JWT(
            header: header, claims: claims, signingInput: Array(text.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count)),
            signature: signature)
    }

    /// Encodes and signs a JWT: `base64url(header) "." base64url(claims) "." base64url(sign(signing input))`.
    public static func encode(
        header: JSONValue,
        claims: JSONValue,
        sign: ([UInt8]) throws -> [UInt8]
    ) rethrows -> String {
        let signingInput = Base64URL.encode(header.serialized()) + "." + Base64URL.encode(claims.serialized())
        let signature = try sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }
}
