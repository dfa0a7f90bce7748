import Foundation
import HTTPTypes
import PushRelayCore
import PushRelayCrypto
import PushRelayStore
import PushRelayWire
import Testing

@testable import PushRelayServer

/// `POST /token` in process: grants for a service-account key, and the grant rate that bounds them (audit-q: every
/// grant stores a row for an hour, and nothing bounded how fast a key's holder could mint).
@Suite("Routes: /token")
struct TokenRouteTests {
    @Test("past the key's grant rate: 429 rate_limit_exceeded with Retry-After; another key unaffected")
    func grantRatePerKey() async throws {
        var options = RelayApplication.Options()
        options.accessTokensPerKeyPerMinute = 2
        let harness = try RelayHarness(options: options)
        let project = try await harness.createProject("shop")
        let keys = try (0..<2).map { _ in try RSAPrivateKey.generate() }
        for (index, key) in keys.enumerated() {
            _ = try await harness.store.addServiceAccountKey(
                project: project.project.name, keyID: "k\(index)", clientEmail: ServiceAccountFile.clientEmail(project: "shop"),
                publicKeyPEM: try key.publicKey.pem)
        }
        func grant(_ index: Int) async throws -> RelayHarness.Answer {
            let now = Int64(Date().timeIntervalSince1970)
            let claims: JSONValue = [
                "iss": .string(ServiceAccountFile.clientEmail(project: "shop")),
                "aud": .string(options.publicURL + "/token"),
                "scope": "https://www.googleapis.com/auth/firebase.messaging",
                "iat": .integer(now), "exp": .integer(now + 3600),
            ]
            let jwt = try JWT.encode(header: ["alg": "RS256", "typ": "JWT", "kid": .string("k\(index)")], claims: claims) {
                try keys[index].signRS256($0)
            }
            return try await harness.request(
                .post, "/token", headers: [.contentType: "application/x-www-form-urlencoded"],
                body: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(jwt)")
        }
        for _ in 0..<2 {
            let granted = try await grant(0)
            #expect(granted.status == 200, "\(granted.text)")
        }
        let refused = try await grant(0)
        #expect(refused.status == 429, "\(refused.text)")
        #expect(try refused.json()["error"] as? String == "rate_limit_exceeded")
        #expect(Int(refused.headers[.retryAfter] ?? "") ?? 0 >= 1)
        // Another key of the same account has its own grants.
        #expect(try await grant(1).status == 200)
        await harness.close()
    }
}
