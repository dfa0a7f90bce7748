import PushRelayWire

/// The JWT-bearer grant of RFC 7523 as a service account uses it at `POST /token`: the request's form fields and
/// the checks of the assertion's claims. No I/O: the caller looks the key up, verifies the signature, and passes
/// the time.
public struct ServiceAccountGrant: Sendable, Hashable {
    /// `grant_type` that a service account sends.
    public static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// The scopes that allow sending: `firebase.messaging`, or `cloud-platform` that includes it.
    public static let sendingScopes: Set<String> = [
        "https://www.googleapis.com/auth/firebase.messaging",
        "https://www.googleapis.com/auth/cloud-platform",
    ]
    /// The longest `exp - iat` accepted: one hour, as Google's endpoint.
    public static let maxLifetimeSeconds: Int64 = 3600
    /// The audiences Google's token endpoint accepts besides its URI, which Google's libraries write whatever the
    /// file's `token_uri` says (`google-auth` signs for `https://oauth2.googleapis.com/token`, older SDKs for the
    /// `accounts.google.com` and `www.googleapis.com` endpoints): a relay that refused them would refuse those
    /// libraries. They are accepted beside the relay's own token URI; any other audience is refused.
    public static let googleAudiences: Set<String> = [
        "https://oauth2.googleapis.com/token",
        "https://accounts.google.com/o/oauth2/token",
        "https://www.googleapis.com/oauth2/v4/token",
    ]
    /// How far the sender's clock may be off from ours, in seconds.
    public static let clockSkewSeconds: Int64 = 60

    /// The parsed assertion.
    public var jwt: JWT

    /// A grant of an already parsed assertion.
    public init(jwt: JWT) { self.jwt = jwt }

    /// Reads the `application/x-www-form-urlencoded` body of a token request: `grant_type` must be the JWT
    /// bearer grant (`unsupported_grant_type` otherwise) and `assertion` a JWT (`invalid_request`).
    public static func parse(form bytes: [UInt8]) throws(OAuthError) -> ServiceAccountGrant {
        var grantType: String?
        var assertion: String?
        for pair in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
            guard let key = PercentDecoding.decode(pair[pair.startIndex..<equals], plus: .space),
                let value = PercentDecoding.decode(
                    equals < pair.endIndex ? pair[(equals + 1)...] : ArraySlice<UInt8>(), plus: .space)
            else { throw .invalidRequest("Malformed application/x-www-form-urlencoded body") }
            switch key {
            case "grant_type":
                guard grantType == nil else { throw .invalidRequest("grant_type is repeated") }
                grantType = value
            case "assertion":
                guard assertion == nil else { throw .invalidRequest("assertion is repeated") }
                assertion = value
            default: continue
            }
        }
        guard let grantType else { throw .invalidRequest("Missing required parameter: grant_type") }
        guard grantType == Self.grantType else {
            throw OAuthError(code: .unsupportedGrantType, message: "Invalid grant_type: \(grantType)")
        }
        guard let assertion, !assertion.isEmpty else { throw .invalidRequest("Missing required parameter: assertion") }
        return ServiceAccountGrant(jwt: try JWT.parse(assertion))
    }

    /// The claims that passed ``validate(issuer:audience:now:)``.
    public struct Claims: Sendable, Hashable {
        /// `iss`: the service account's `client_email`.
        public var issuer: String
        /// `scope`, split on spaces.
        public var scopes: [String]
        /// `exp` in seconds since the epoch.
        public var expiresAt: Int64
    }

    /// Checks the header and claims (after the caller verified the signature with the key of `kid`):
    /// `alg` is `RS256`; `iss` is `issuer` (the key's client email); `aud` is `audience` (this relay's token URI) or
    /// one of ``googleAudiences``;
    /// `scope` holds a sending scope; `iat` and `exp` are integers, `exp - iat` is at most one hour, `iat` is not in
    /// the future and `exp` not in the past, both with ``clockSkewSeconds`` of slack. Every failure is
    /// `invalid_grant` (`invalid_scope` for the scope), worded like Google's endpoint.
    public func validate(issuer: String, audience: String, now: Int64) throws(OAuthError) -> Claims {
        guard jwt.algorithm == "RS256" else { throw .invalidGrant("Invalid JWT: alg must be RS256") }
        let claims = jwt.claims
        guard let iss = claims["iss"]?.stringValue, iss == issuer else {
            throw .invalidGrant("Invalid JWT: the issuer is not the key's service account")
        }
        guard let aud = claims["aud"]?.stringValue else { throw .invalidGrant("Invalid JWT: no audience (aud)") }
        guard aud == audience || Self.googleAudiences.contains(aud) else {
            throw .invalidGrant("Invalid JWT: audience \(aud) is not this token endpoint (\(audience))")
        }
        guard let iat = claims["iat"]?.int64Value, let exp = claims["exp"]?.int64Value else {
            throw .invalidGrant("Invalid JWT: iat and exp must be integer seconds")
        }
        // Subtracted with overflow reported: claims such as iat = -2^63 and exp = 0 (signed by a key holder) must
        // be refused, not trap the daemon.
        let lifetime = exp.subtractingReportingOverflow(iat)
        guard exp > iat, !lifetime.overflow, lifetime.partialValue <= Self.maxLifetimeSeconds else {
            throw .invalidGrant("Invalid JWT: exp must be after iat and at most one hour later")
        }
        guard iat <= now + Self.clockSkewSeconds else {
            throw .invalidGrant("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
        }
        guard exp > now - Self.clockSkewSeconds else {
            throw .invalidGrant("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
        }
        let scopes = (claims["scope"]?.stringValue ?? "").split(separator: " ").map(String.init)
        guard scopes.contains(where: { Self.sendingScopes.contains($0) }) else {
            throw OAuthError(
                code: .invalidScope,
                message: "Invalid OAuth scope: \(scopes.joined(separator: " ")); firebase.messaging or cloud-platform is required")
        }
        return Claims(issuer: iss, scopes: scopes, expiresAt: exp)
    }
}
