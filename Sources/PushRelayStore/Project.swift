public import Foundation

/// A project: the unit that owns a server key, a client key, devices and topics.
public struct Project: Hashable, Sendable {
    /// The store's id of the project.
    public var id: ProjectID
    /// The unique name given at creation (`pushrelay project create NAME`).
    public var name: String
    /// The numeric sender id (11 digits, unique), FCM's `google.c.sender.id` and `authorizedEntity`.
    public var senderID: Int64
    /// When the project was created.
    public var createdAt: Date

    /// Creates a value (the store creates projects; this is for tests and other store implementations).
    public init(id: ProjectID, name: String, senderID: Int64, createdAt: Date) {
        self.id = id
        self.name = name
        self.senderID = senderID
        self.createdAt = createdAt
    }
}
