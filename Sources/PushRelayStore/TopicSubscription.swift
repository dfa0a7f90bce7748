public import Foundation

/// One topic a device is subscribed to (for `GET /iid/info/{token}?details=true`).
public struct TopicSubscription: Hashable, Sendable {
    /// The topic name, without `/topics/`.
    public var topic: String
    /// When the subscription was made (`rel.topics.<name>.addDate`).
    public var addedAt: Date

    /// Creates a value.
    public init(topic: String, addedAt: Date) {
        self.topic = topic
        self.addedAt = addedAt
    }
}
