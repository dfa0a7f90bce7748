/// The per-token outcome of ``PushStore/subscribe(tokens:to:project:)`` and
/// ``PushStore/unsubscribe(tokens:from:project:)``, in request order. Both are idempotent: subscribing twice or
/// removing an absent subscription is ``ok``.
public enum TopicMembershipResult: Hashable, Sendable {
    /// Done (Instance ID answers `{}`).
    case ok
    /// No such token (`NOT_FOUND`).
    case notFound
    /// The token belongs to another project (`INVALID_ARGUMENT`, as the Instance ID API answers a wrong sender).
    case wrongProject
    /// The device already holds the maximum number of topics (`TOO_MANY_TOPICS`; FCM: 2000).
    case tooManyTopics
}
