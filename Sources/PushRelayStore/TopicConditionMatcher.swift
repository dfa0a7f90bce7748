/// A compiled topic condition (`'a' in topics && ('b' in topics || 'c' in topics)`), as the store needs it to
/// expand a condition message: the topics it names (the candidates) and a predicate over one device's subscribed
/// topics (restricted to the candidates). The relay builds it from the core's condition AST; the store persists only
/// the condition text and compiles it again with ``SQLiteStore/Configuration/conditionCompiler`` after a restart.
public struct TopicConditionMatcher: Sendable {
    /// The topic names the condition mentions. Only devices subscribed to at least one of them are evaluated.
    public var topics: [String]
    /// Whether a device subscribed to exactly these topics (among ``topics``) receives the message.
    public var matches: @Sendable (Set<String>) -> Bool

    /// Creates a matcher.
    public init(topics: [String], matches: @escaping @Sendable (Set<String>) -> Bool) {
        self.topics = topics
        self.matches = matches
    }
}
