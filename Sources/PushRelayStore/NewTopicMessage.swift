/// A message to a topic or a topic condition. It is committed as one row (durable at return) and expanded into the
/// subscribers' queues in the background; devices that subscribe after the send do not get it.
public struct NewTopicMessage: Hashable, Sendable {
    /// Whom the message goes to.
    public enum Target: Hashable, Sendable {
        /// Every device of the project subscribed to this topic (the name without `/topics/`).
        case topic(String)
        /// Every device of the project whose subscriptions satisfy this condition text; the store compiles it with
        /// its condition compiler (``SQLiteStore/Configuration/conditionCompiler``).
        case condition(String)
    }

    /// The sending project.
    public var project: ProjectID
    /// The topic or condition.
    public var target: Target
    /// The body of each device's copy (opaque to the store). Topic copies are numbered at expansion with each
    /// device's own increasing id; the body should therefore not contain the id.
    public var body: [UInt8]
    /// The collapse key, or nil.
    public var collapseKey: String?
    /// Time to live, counted from the send (not from the expansion). Must be positive: a TTL-0 topic message would
    /// expire before the expansion reaches most devices (the store throws ``StoreError/invalidArgument``).
    public var timeToLive: Duration
    /// The send's `restricted_package_name`, or nil: when set, only subscribers whose device app (``Device/app``)
    /// is exactly this name get a copy; the subscribers of other apps are skipped, not told. Stored with the
    /// message, so an expansion resumed after a restart keeps it.
    public var restrictedPackageName: String?

    /// Creates a topic message; the default time to live is FCM's four weeks, and no package restriction.
    public init(
        project: ProjectID,
        target: Target,
        body: [UInt8],
        collapseKey: String? = nil,
        timeToLive: Duration = .seconds(2_419_200),
        restrictedPackageName: String? = nil
    ) {
        self.project = project
        self.target = target
        self.body = body
        self.collapseKey = collapseKey
        self.timeToLive = timeToLive
        self.restrictedPackageName = restrictedPackageName
    }
}

extension NewTopicMessage {
    /// What both stores write of a topic message's target, once it passed the checks they share.
    struct StoredTarget {
        /// The time to live in microseconds (positive).
        var timeToLiveMicros: Int64
        /// The topic column: the name for a topic send, nil for a condition.
        var topic: String?
        /// The condition column: the text for a condition send, nil for a topic.
        var condition: String?
    }

    /// The checks both stores make before a topic message is stored: a positive time to live, a topic name that is
    /// not empty, a condition that `compile` accepts (each failure ``StoreError/invalidArgument(_:)``).
    func storedTarget(compile: (String) -> TopicConditionMatcher?) throws(StoreError) -> StoredTarget {
        let ttl = StoreContext.micros(self.timeToLive)
        guard ttl > 0 else {
            throw StoreError.invalidArgument("a topic message needs a positive time to live")
        }
        switch self.target {
        case .topic(let name):
            guard !name.isEmpty else { throw StoreError.invalidArgument("empty topic name") }
            return StoredTarget(timeToLiveMicros: ttl, topic: name, condition: nil)
        case .condition(let text):
            guard compile(text) != nil else {
                throw StoreError.invalidArgument("the condition does not compile")
            }
            return StoredTarget(timeToLiveMicros: ttl, topic: nil, condition: text)
        }
    }
}
