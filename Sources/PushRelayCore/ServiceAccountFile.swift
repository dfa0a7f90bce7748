public import PushRelayWire

/// A service-account key file in Google's format, as `pushrelay project service-account` writes it and as Google's
/// libraries (`google-auth`, the Admin SDKs) read it:
///
///     {"type": "service_account", "project_id": "shop", "private_key_id": "<40 hex>",
///      "private_key": "-----BEGIN PRIVATE KEY-----\n…", "client_email": "pushrelay-adminsdk@shop.iam.pushrelay",
///      "client_id": "<21 digits>", "auth_uri": "…/o/oauth2/auth", "token_uri": "<public url>/token",
///      "auth_provider_x509_cert_url": "…", "client_x509_cert_url": "…", "universe_domain": "googleapis.com"}
///
/// The relay keeps only the public key and the `private_key_id`; the private key exists in this file alone.
public struct ServiceAccountFile: Sendable, Hashable {
    /// `project_id`: the PushRelay project's name (the `{project_id}` of the v1 send URL).
    public var projectID: String
    /// `private_key_id`: names the key (the JWT header's `kid`).
    public var privateKeyID: String
    /// `private_key`: PKCS#8 PEM.
    public var privateKey: String
    /// `client_email`: the JWT's `iss`.
    public var clientEmail: String
    /// `client_id`.
    public var clientID: String
    /// `token_uri`: where the JWT is exchanged for an access token (the JWT's `aud`).
    public var tokenURI: String
    /// The relay's public base URL (the `token_uri` without `/token`).
    public var baseURL: String {
        tokenURI.hasSuffix("/token") ? String(tokenURI.dropLast(6)) : tokenURI
    }

    /// A value.
    public init(
        projectID: String, privateKeyID: String, privateKey: String, clientEmail: String, clientID: String,
        tokenURI: String
    ) {
        self.projectID = projectID
        self.privateKeyID = privateKeyID
        self.privateKey = privateKey
        self.clientEmail = clientEmail
        self.clientID = clientID
        self.tokenURI = tokenURI
    }

    /// The client email of a project's service account: `pushrelay-adminsdk@<project>.iam.pushrelay`.
    public static func clientEmail(project: String) -> String { "pushrelay-adminsdk@\(project).iam.pushrelay" }

    /// The project a client email of ``clientEmail(project:)`` names, or nil for any other address.
    public static func project(ofClientEmail email: String) -> String? {
        let prefix = "pushrelay-adminsdk@", suffix = ".iam.pushrelay"
        guard email.hasPrefix(prefix), email.hasSuffix(suffix), email.count > prefix.count + suffix.count else { return nil }
        return String(email.dropFirst(prefix.count).dropLast(suffix.count))
    }

    /// The token URI for a public base URL (`http://relay.example:8080` → `http://relay.example:8080/token`).
    public static func tokenURI(publicURL: String) -> String {
        (publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL) + "/token"
    }

    /// A new key id: 40 lowercase hex digits (160 random bits), the shape of Google's.
    public static func newPrivateKeyID() -> String {
        var generator = SecureRandom()
        var text = ""
        for _ in 0..<40 { text.append(String(generator.next(upperBound: UInt8(16)), radix: 16)) }
        return text
    }

    /// A new client id: 21 decimal digits.
    public static func newClientID() -> String {
        var generator = SecureRandom()
        var text = String(1 + generator.next(upperBound: UInt8(9)))
        for _ in 0..<20 { text.append(String(generator.next(upperBound: UInt8(10)))) }
        return text
    }

    /// The file's JSON, keys in Google's order.
    public var json: JSONValue {
        let base = baseURL
        return [
            "type": "service_account",
            "project_id": .string(projectID),
            "private_key_id": .string(privateKeyID),
            "private_key": .string(privateKey),
            "client_email": .string(clientEmail),
            "client_id": .string(clientID),
            "auth_uri": .string(base + "/o/oauth2/auth"),
            "token_uri": .string(tokenURI),
            "auth_provider_x509_cert_url": .string(base + "/oauth2/v1/certs"),
            "client_x509_cert_url": .string(base + "/robot/v1/metadata/x509/" + clientEmail),
            "universe_domain": "googleapis.com",
        ]
    }

    /// Reads a service-account file; `nil` reasons name the missing field.
    public static func parse(_ bytes: [UInt8]) throws(ServiceAccountFileError) -> ServiceAccountFile {
        guard let object = (try? JSONValue.parse(bytes))?.objectValue else {
            throw ServiceAccountFileError(message: "not a JSON object")
        }
        func field(_ name: String) throws(ServiceAccountFileError) -> String {
            guard let value = object[name]?.stringValue, !value.isEmpty else {
                throw ServiceAccountFileError(message: "missing \"\(name)\"")
            }
            return value
        }
        guard object["type"]?.stringValue == "service_account" else {
            throw ServiceAccountFileError(message: "\"type\" is not \"service_account\"")
        }
        return ServiceAccountFile(
            projectID: try field("project_id"), privateKeyID: try field("private_key_id"),
            privateKey: try field("private_key"), clientEmail: try field("client_email"),
            clientID: object["client_id"]?.stringValue ?? "", tokenURI: try field("token_uri"))
    }
}

/// A service-account file that cannot be used.
public struct ServiceAccountFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public var message: String
    public var description: String { "service-account file: \(message)" }
}
