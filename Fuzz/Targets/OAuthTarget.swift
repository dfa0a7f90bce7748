import PushRelayWire

// Fuzz target (dispatched by CoreEntry.swift): what the unauthenticated token endpoint (`POST /token`) reads — the
// form body, the JWT assertion in it — and the claim checks it makes once the signature verified
// (Sources/PushRelayCore); and the `Authorization` header every send and device request carries (`key=`, `Bearer`). The input is tried both as a form body and as a bare JWT; the claims are checked against
// their own `iss` and `aud`, so that the checks past those two are reached.
func fuzzOAuth(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? ServiceAccountGrant.parse(form: bytes)
    let header = String(decoding: bytes, as: UTF8.self)
    _ = AuthorizationHeader.serverKey(header)
    _ = AuthorizationHeader.bearer(header)
    guard let jwt = try? JWT.parse(String(decoding: bytes, as: UTF8.self)) else { return 0 }
    _ = jwt.keyID
    let issuer = jwt.claims["iss"]?.stringValue ?? ""
    let audience = jwt.claims["aud"]?.stringValue ?? ""
    _ = try? ServiceAccountGrant(jwt: jwt).validate(issuer: issuer, audience: audience, now: 1_700_000_000)
    return 0
}
