import Foundation
import HTTPTypes
import Logging
import NIOCore
import PushRelayCore
import PushRelayWire
import PushRelayCrypto
import PushRelayHTTP
import PushRelayStore

/// `POST /token`: the OAuth 2.0 token endpoint of service accounts (the JWT-bearer grant of RFC 7523), the
/// `token_uri` of the files `pushrelay project service-account` writes.
///
/// Order of work: read the form (`invalid_request`, `unsupported_grant_type`), find the key the JWT's `kid` names
/// (or, without `kid`, the valid keys of the account `iss` names), verify the RS256 signature against the stored
/// public key, check the claims (issuer, audience = this relay's token URI, scope, `iat`/`exp` with a minute of
/// clock skew), then store a fresh random access token (hashed) for one hour and answer
/// `{"access_token", "expires_in", "token_type": "Bearer"}`. Every refusal is `400` in OAuth's JSON form, but for a
/// key past its grant rate (``grants``): `429 rate_limit_exceeded` with `Retry-After`.
struct TokenRoute: Sendable {
    let store: any PushStore
    let publicURL: PublicURL
    /// Grants per service-account key (``RelayApplication/Options/accessTokensPerKeyPerMinute``). Every grant stores
    /// a row for the token's hour: without a bound, a key's holder minting in a loop would grow the store at that
    /// rate. Counted after the signature is verified, so that nobody without the key can spend its grants.
    let grants: RateLimiter<String>
    let logger: Logger
    /// How long an access token is valid: one hour, as Google's.
    static let lifetimeSeconds: Int64 = 3600

    func handle(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let body = try await request.body.collect(upTo: 64 * 1024)
        let grant: ServiceAccountGrant
        do {
            grant = try ServiceAccountGrant.parse(form: Array(body.readableBytesView))
        } catch {
            return Self.answer(error)
        }
        let now = Int64(Date().timeIntervalSince1970)
        let key: ServiceAccountKey
        do {
            key = try await verifiedKey(of: grant.jwt)
            _ = try grant.validate(issuer: key.clientEmail, audience: publicURL.tokenURI, now: now)
        } catch let error as OAuthError {
            logger.info("token grant refused", metadata: ["relay.reason": "\(error.message)"])
            return Self.answer(error)
        }
        if let wait = grants.admit(key.id) {
            logger.info("token grant refused: the key's grant rate", metadata: ["relay.key": "\(key.id)"])
            return Self.answer(
                OAuthError(
                    code: .rateLimitExceeded,
                    message: "more than \(grants.perMinute) access tokens a minute for this key; "
                        + "use a token until it expires (expires_in)"),
                status: .tooManyRequests, retryAfterSeconds: wait)
        }
        let token = Credentials.accessToken()
        do {
            try await store.issueAccessToken(
                token, key: key, expiresAt: Date(timeIntervalSince1970: TimeInterval(now + Self.lifetimeSeconds)))
        } catch let error as StoreError where error.code == .notFound {
            return Self.answer(OAuthError(code: .invalidGrant, message: "Invalid JWT Signature: the key is revoked"))
        }
        let answer: JSONValue = [
            "access_token": .string(token), "expires_in": .integer(Self.lifetimeSeconds - 1), "token_type": "Bearer",
        ]
        var fields = HTTPFields()
        fields[.contentType] = "application/json; charset=utf-8"
        fields[.cacheControl] = "no-store"
        return HTTPServerResponse(status: .ok, headerFields: fields, body: .bytes(ByteBuffer(bytes: answer.serialized())))
    }

    /// The valid key whose public key verifies the JWT's signature: the one its `kid` names, or, for a JWT without
    /// `kid` (signers that know only the private key omit it), whichever valid key of the account its `iss` names
    /// verifies it.
    private func verifiedKey(of jwt: JWT) async throws -> ServiceAccountKey {
        let invalid = OAuthError(code: .invalidGrant, message: "Invalid JWT Signature.")
        let candidates: [ServiceAccountKey]
        if let keyID = jwt.keyID {
            candidates = try await store.serviceAccountKey(id: keyID).map { [$0] } ?? []
        } else {
            guard let issuer = jwt.claims["iss"]?.stringValue,
                let project = ServiceAccountFile.project(ofClientEmail: issuer)
            else {
                throw OAuthError(code: .invalidGrant, message: "Invalid JWT: no kid, and no iss naming a service account")
            }
            candidates = try await store.serviceAccountKeys(project: project).filter { $0.clientEmail == issuer }
        }
        for key in candidates where key.revokedAt == nil {
            if let publicKey = try? RSAPublicKey(pem: key.publicKeyPEM),
                publicKey.verifyRS256(signature: jwt.signature, message: jwt.signingInput)
            {
                return key
            }
        }
        throw invalid
    }

    /// `error` in OAuth's JSON form, with its status (or `status`), and `Retry-After` when given.
    static func answer(
        _ error: OAuthError, status: HTTPResponse.Status? = nil, retryAfterSeconds: Int? = nil
    ) -> HTTPServerResponse {
        var fields = HTTPFields()
        fields[.contentType] = "application/json; charset=utf-8"
        fields[.cacheControl] = "no-store"
        if let retryAfterSeconds { fields[.retryAfter] = String(retryAfterSeconds) }
        return HTTPServerResponse(
            status: status ?? HTTPResponse.Status(code: error.httpStatus), headerFields: fields,
            body: .bytes(ByteBuffer(bytes: error.body)))
    }
}
