// Fuzz target (dispatched by CoreEntry.swift): topic conditions and topic names (Sources/PushRelayCore). A parsed condition is evaluated
// against every subset of its topics, which also checks that the postfix program is well formed.
func fuzzCondition(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = TopicName(text)
    guard let condition = try? TopicCondition.parse(text) else { return 0 }
    let topics = condition.topics.sorted()
    precondition(topics.count <= FCMLimits.maxConditionTopics)
    for mask in 0..<(1 << topics.count) {
        let subscribed = Set(topics.enumerated().filter { mask & (1 << $0.offset) != 0 }.map(\.element))
        _ = condition.evaluate(subscribedTopics: subscribed)
    }
    return 0
}
