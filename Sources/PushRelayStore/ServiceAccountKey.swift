public import Foundation

/// A service-account key of a project, as the store keeps it: the public half only. The private key exists only in
/// the service-account file that `pushrelay project service-account` wrote.
public struct ServiceAccountKey: Hashable, Sendable {
    /// `private_key_id` of the file, the JWT header's `kid`.
    public var id: String
    /// The project the key sends for.
    public var project: ProjectID
    /// `client_email` of the file, the JWT's `iss`.
    public var clientEmail: String
    /// The public key, a `-----BEGIN PUBLIC KEY-----` PEM.
    public var publicKeyPEM: String
    /// When the key was added.
    public var createdAt: Date
    /// When the key was revoked; nil while it is valid.
    public var revokedAt: Date?

    /// Creates a value (the store creates keys; this is for tests and other store implementations).
    public init(
        id: String, project: ProjectID, clientEmail: String, publicKeyPEM: String, createdAt: Date,
        revokedAt: Date? = nil
    ) {
        self.id = id
        self.project = project
        self.clientEmail = clientEmail
        self.publicKeyPEM = publicKeyPEM
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}
