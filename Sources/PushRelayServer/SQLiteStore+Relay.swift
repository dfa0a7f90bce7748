public import PushRelayStore
import PushRelayCore

extension SQLiteStore.Configuration {
    /// The store as the relay uses it: in `directory`, with topic conditions compiled by the core's grammar.
    public static func relay(directory: String) -> SQLiteStore.Configuration {
        var configuration = SQLiteStore.Configuration(directory: directory)
        configuration.conditionCompiler = Self.relayConditionCompiler
        return configuration
    }

    /// Topic conditions compiled by the core's grammar (both stores use it).
    public static let relayConditionCompiler: @Sendable (String) -> TopicConditionMatcher? = { text in
        guard let condition = try? TopicCondition.parse(text) else { return nil }
        return TopicConditionMatcher(topics: condition.topics.sorted()) { condition.evaluate(subscribedTopics: $0) }
    }
}
