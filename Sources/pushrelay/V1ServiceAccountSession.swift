import ArgumentParser
import Foundation
import HTTPTypes
import PushRelayCore
import PushRelayWire
import PushRelayCrypto

/// The sender's side of a service account: reads the file, signs the RS256 JWT (`iss` = client email, `aud` =
/// token URI, the `firebase.messaging` scope, one hour) and exchanges it at the file's `token_uri`.
struct V1ServiceAccountSession {
    let file: ServiceAccountFile
    let caFile: String?

    init(file path: String, caFile: String?) throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        do {
            self.file = try ServiceAccountFile.parse(Array(bytes))
        } catch {
            throw ValidationError("\(path): \(error)")
        }
        self.caFile = caFile
    }

    /// A fresh access token from `token_uri`.
    func accessToken() async throws -> String {
        let key: RSAPrivateKey
        do {
            key = try RSAPrivateKey(pem: file.privateKey)
        } catch {
            throw ValidationError("the service account's private_key: \(error)")
        }
        let now = Int64(Date().timeIntervalSince1970)
        let assertion = try JWT.encode(
            header: ["alg": "RS256", "typ": "JWT", "kid": .string(file.privateKeyID)],
            claims: [
                "iss": .string(file.clientEmail), "scope": "https://www.googleapis.com/auth/firebase.messaging",
                "aud": .string(file.tokenURI), "iat": .integer(now), "exp": .integer(now + 3600),
            ]
        ) { try key.signRS256($0) }
        guard let tokenURL = URL(string: file.tokenURI), let scheme = tokenURL.scheme, let host = tokenURL.host else {
            throw ValidationError("token_uri \(file.tokenURI) is not a URL")
        }
        let base = URL(string: "\(scheme)://\(host)\(tokenURL.port.map { ":\($0)" } ?? "")")!
        var fields = HTTPFields()
        fields[.contentType] = "application/x-www-form-urlencoded"
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        let answer: RelayHTTPCall.Answer
        do {
            answer = try await RelayHTTPCall(server: base, caFile: caFile).perform(
                .post, path: tokenURL.path, headerFields: fields, body: Array(form.utf8))
        } catch {
            printToStandardError("pushrelay: cannot reach \(file.tokenURI): \(error)")
            throw ExitCode(1)
        }
        guard answer.status == 200, let token = (try? JSONValue.parse(answer.body))?["access_token"]?.stringValue else {
            printToStandardError("pushrelay: the token endpoint answered HTTP \(answer.status): \(answer.body)")
            throw ExitCode(1)
        }
        return token
    }
}
