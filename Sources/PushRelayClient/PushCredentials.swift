public import Foundation

/// What registration gives a device: the token to hand to the back end and the secret that opens the stream.
///
/// The ``token`` is an address: the back end sends to it, and knowing it does not let anyone read. The ``secret``
/// is the device's credential and never leaves the device; ``save(to:)`` writes the file readable by its owner only.
public struct PushCredentials: Codable, Sendable, Hashable {
    /// The registration token, e.g. `eeDh2Sd5HknG1zdC1w1UBD:APA91b…`; `nil` when only the secret is known.
    public var token: String?
    /// The device secret, sent as `Authorization: Bearer <secret>` on the stream.
    public var secret: String
    /// The project's sender id, when the server told it.
    public var senderID: String?

    /// Creates credentials, e.g. from a previous ``PushClient/register()``.
    public init(token: String?, secret: String, senderID: String? = nil) {
        self.token = token
        self.secret = secret
        self.senderID = senderID
    }

    private enum CodingKeys: String, CodingKey {
        case token, secret
        case senderID = "sender_id"
    }

    /// Reads credentials written by ``save(to:)``.
    ///
    /// - Throws: ``PushClientError`` with code ``PushClientError/Code-swift.struct/invalidFile`` when the file is
    ///   missing or not credentials.
    public static func load(from url: URL) throws -> PushCredentials {
        do {
            return try JSONDecoder().decode(PushCredentials.self, from: Data(contentsOf: url))
        } catch {
            throw PushClientError(code: .invalidFile, message: "cannot read credentials from \(url.path)")
        }
    }

    /// Writes the credentials as JSON, atomically, readable and writable by the owner only (mode 0600).
    public func save(to url: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(self)
        try data.write(to: url, options: .atomic)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
    }
}

extension PushCredentials: CustomStringConvertible {
    /// The token and sender id; never the secret.
    public var description: String {
        "PushCredentials(token: \(token ?? "unknown"), senderID: \(senderID ?? "unknown"), secret: <redacted>)"
    }
}
