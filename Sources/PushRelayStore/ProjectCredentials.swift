/// A new project and its keys in clear. The store keeps only their SHA-256 hashes: this value is the one and only
/// time the keys can be read. Print them once; never log them.
public struct ProjectCredentials: Hashable, Sendable {
    /// The project created.
    public var project: Project
    /// The secret key senders put in `Authorization: key=…`.
    public var serverKey: String
    /// The key apps register devices with (public, like Firebase's API key).
    public var clientKey: String

    /// Creates a value.
    public init(project: Project, serverKey: String, clientKey: String) {
        self.project = project
        self.serverKey = serverKey
        self.clientKey = clientKey
    }
}
