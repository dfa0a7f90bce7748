import PushRelayWire

/// An error of the OAuth 2.0 token endpoint (`POST /token`, RFC 6749 §5.2), and its one mapping to the wire:
/// `{"error": "<code>", "error_description": "<why>"}` with `400` (or `401` for `invalid_client`).
public struct OAuthError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `error` code; new codes can be added without breaking callers.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        fileprivate let wire: String
        fileprivate init(_ wire: String) { self.wire = wire }

        /// A parameter is missing, repeated or malformed (no `assertion`, a JWT that is not three segments).
        public static let invalidRequest = Code("invalid_request")
        /// The grant is refused: bad signature, unknown or revoked key, wrong issuer or audience, expired.
        public static let invalidGrant = Code("invalid_grant")
        /// `grant_type` is not `urn:ietf:params:oauth:grant-type:jwt-bearer`.
        public static let unsupportedGrantType = Code("unsupported_grant_type")
        /// The JWT asks for no scope that grants sending (`firebase.messaging` or `cloud-platform`).
        public static let invalidScope = Code("invalid_scope")
        /// The server cannot answer now (its store is unavailable); the client retries (with `503` and `Retry-After`;
        /// RFC 6749 defines the code for the authorization endpoint, and google-auth retries on it).
        public static let temporarilyUnavailable = Code("temporarily_unavailable")
        /// The server failed (`500`).
        public static let serverError = Code("server_error")
        /// The key asked for more access tokens than its grant rate allows (with `429` and `Retry-After`); a
        /// sender reuses a token until it expires.
        public static let rateLimitExceeded = Code("rate_limit_exceeded")

        /// The wire string, e.g. `invalid_grant`.
        public var wireName: String { wire }
        public var description: String { wire }
    }

    /// What went wrong.
    public var code: Code
    /// The `error_description`.
    public var message: String

    /// An error.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.wireName): \(message)" }

    /// The HTTP status: `400` for every code (RFC 6749 §5.2; Google answers `invalid_grant` with 400 too).
    public var httpStatus: Int { 400 }

    /// The JSON body.
    public var body: [UInt8] {
        let value: JSONValue = ["error": .string(code.wireName), "error_description": .string(message)]
        return value.serialized()
    }

    static func invalidGrant(_ message: String) -> OAuthError { OAuthError(code: .invalidGrant, message: message) }
    static func invalidRequest(_ message: String) -> OAuthError { OAuthError(code: .invalidRequest, message: message) }
}
