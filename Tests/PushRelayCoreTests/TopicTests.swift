import PushRelayCore
import Testing

@Suite("Topics and conditions")
struct TopicTests {
    @Test func topicNames() {
        #expect(TopicName("news")?.name == "news")
        #expect(TopicName("/topics/news")?.name == "news")
        #expect(TopicName("/topics/news")?.path == "/topics/news")
        #expect(TopicName("aZ09-_.~%") != nil)
        #expect(TopicName(String(repeating: "a", count: 900)) != nil)
        for bad in ["", "/topics/", "a b", "a/b", "é", "a,b", "/topics//topics/a", String(repeating: "a", count: 901)] {
            #expect(TopicName(bad) == nil, "\(bad)")
        }
        #expect(TopicName("News") != TopicName("news"))
    }

    /// Conditions × subscription sets → whether the device receives the message.
    static let table: [(String, [Set<String>: Bool])] = [
        ("'a' in topics", [["a"]: true, ["b"]: false, []: false]),
        ("\"a\" in topics", [["a"]: true, ["A"]: false]),
        ("'a' in topics && 'b' in topics", [["a", "b"]: true, ["a"]: false, ["b"]: false]),
        ("'a' in topics || 'b' in topics", [["a"]: true, ["b"]: true, ["c"]: false]),
        (
            "'a' in topics && ('b' in topics || 'c' in topics)",
            [["a", "b"]: true, ["a", "c"]: true, ["a"]: false, ["b", "c"]: false, ["a", "b", "c"]: true]
        ),
        // && binds tighter than ||.
        ("'a' in topics || 'b' in topics && 'c' in topics", [["a"]: true, ["b"]: false, ["b", "c"]: true]),
        ("('a' in topics || 'b' in topics) && 'c' in topics", [["a"]: false, ["a", "c"]: true, ["b", "c"]: true]),
        ("!('a' in topics)", [["a"]: false, ["b"]: true, []: true]),
        ("'a' in topics && !'b' in topics", [["a"]: true, ["a", "b"]: false]),
        ("!!'a' in topics", [["a"]: true, []: false]),
        (
            "'a' in topics&&'b' in topics||'c' in topics&&'d' in topics||'e' in topics",
            [["a", "b"]: true, ["c", "d"]: true, ["e"]: true, ["a", "c"]: false]
        ),
        ("  ( ( 'x.y~z%1' in topics ) )  ", [["x.y~z%1"]: true, ["x"]: false]),
    ]

    @Test(arguments: table)
    func evaluation(condition: String, expectations: [Set<String>: Bool]) throws {
        let parsed = try TopicCondition.parse(condition)
        #expect(parsed.text == condition)
        for (subscriptions, expected) in expectations {
            #expect(parsed.evaluate(subscribedTopics: subscriptions) == expected, "\(condition) with \(subscriptions)")
        }
    }

    @Test func topicsSet() throws {
        let condition = try TopicCondition.parse("'a' in topics && ('b' in topics || 'a' in topics)")
        #expect(condition.topics == ["a", "b"])
        #expect(!condition.matchesUnsubscribed)
        #expect(try TopicCondition.parse("!'a' in topics").matchesUnsubscribed)
        #expect(
            try TopicCondition.parse("'a' in topics && 'b' in topics").expression == .and(.topic("a"), .topic("b"))
        )
    }

    @Test func fiveTopicsAreTheLimit() throws {
        let five = (1...5).map { "'t\($0)' in topics" }.joined(separator: " || ")
        #expect(try TopicCondition.parse(five).topics.count == 5)
        let six = (1...6).map { "'t\($0)' in topics" }.joined(separator: " || ")
        #expect(throws: TopicConditionError.self) { try TopicCondition.parse(six) }
        do {
            _ = try TopicCondition.parse(six)
        } catch {
            #expect(error.reason == "Invalid condition: more than 5 topics at position 90")
        }
    }

    @Test(arguments: [
        ("", "Invalid condition: expected a quoted topic name, found end of condition at position 0"),
        ("a in topics", "Invalid condition: expected a quoted topic name, found 'a' at position 0"),
        ("'a' in topic", "Invalid condition: expected \"in topics\", found 't' at position 7"),
        ("'a' in topicsx", "Invalid condition: expected \"in topics\", found 't' at position 7"),
        ("'a' intopics", "Invalid condition: expected \"in topics\", found 'i' at position 4"),
        ("'a in topics", "Invalid condition: unterminated topic name at position 0"),
        ("'a\" in topics", "Invalid condition: unterminated topic name at position 0"),
        ("'' in topics", "Invalid condition: invalid topic name '' at position 1"),
        ("'a b' in topics", "Invalid condition: invalid topic name 'a b' at position 1"),
        ("'a' in topics &&", "Invalid condition: expected a quoted topic name, found end of condition at position 16"),
        ("'a' in topics & 'b' in topics", "Invalid condition: unexpected '&' at position 14"),
        ("'a' in topics || || 'b' in topics", "Invalid condition: expected a quoted topic name, found '|' at position 17"),
        ("('a' in topics", "Invalid condition: expected \")\", found end of condition at position 14"),
        ("'a' in topics)", "Invalid condition: unexpected ')' at position 13"),
        ("'a' in topics 'b' in topics", "Invalid condition: unexpected ''' at position 14"),
        ("'a' IN topics", "Invalid condition: expected \"in topics\", found 'I' at position 4"),
    ])
    func malformed(condition: String, reason: String) {
        do {
            _ = try TopicCondition.parse(condition)
            Issue.record("accepted \(condition)")
        } catch {
            #expect(error.reason == reason)
        }
    }

    @Test func deepParenthesesAreBounded() {
        let deep = String(repeating: "(", count: 1000) + "'a' in topics" + String(repeating: ")", count: 1000)
        #expect(throws: TopicConditionError.self) { try TopicCondition.parse(deep) }
    }

    /// The input that crashed the daemon (SIGSEGV): 200,000 `!` recursed once each in the parser. It is now refused
    /// by its length before anything is parsed.
    @Test func longNegationChainIsRefusedByLength() {
        let hostile = String(repeating: "!", count: 200_000) + "'a' in topics"
        do {
            _ = try TopicCondition.parse(hostile)
            Issue.record("accepted a 200,000-byte condition")
        } catch {
            #expect(error.reason == "Invalid condition: longer than 8192 bytes at position 8192")
        }
    }

    /// Within the length limit, `!` and `(` share one nesting bound.
    @Test(arguments: ["!", "(", "!("])
    func nestingIsBounded(opener: String) throws {
        func condition(levels: Int) -> String {
            let open = String(repeating: opener, count: levels / opener.count)
            let close = String(repeating: ")", count: open.filter { $0 == "(" }.count)
            return open + "'a' in topics" + close
        }
        let limit = FCMLimits.maxConditionNesting
        let deepest = try TopicCondition.parse(condition(levels: limit))
        #expect(deepest.topics == ["a"])
        do {
            _ = try TopicCondition.parse(condition(levels: limit + opener.count))
            Issue.record("accepted nesting deeper than \(limit)")
        } catch {
            #expect(error.reason.hasPrefix("Invalid condition: nested deeper than \(limit) levels at position"))
        }
        // A chain of 8,000 `!` fits the length limit and is refused by the nesting bound, not by the stack.
        #expect(throws: TopicConditionError.self) {
            try TopicCondition.parse(String(repeating: opener, count: 8000 / opener.count) + "'a' in topics")
        }
    }

    /// Five topics of the longest name, with operators, parentheses and `!`, fit the length limit.
    @Test func longestLegitimateConditionFits() throws {
        let names = (1...5).map { "\($0)" + String(repeating: "n", count: FCMLimits.maxTopicNameLength - 1) }
        let text = "!(" + names.map { "( '\($0)' in topics )" }.joined(separator: " && ") + ")"
        let condition = try TopicCondition.parse(text)
        #expect(condition.topics.count == 5)
        #expect(condition.evaluate(subscribedTopics: []))
        #expect(!condition.evaluate(subscribedTopics: Set(names)))
    }

    /// The iterative evaluator agrees with a direct walk of the tree on every subset of three topics.
    @Test func postfixEvaluationMatchesTheTree() throws {
        let text = "!('a' in topics && !('b' in topics || !'c' in topics)) || 'a' in topics && 'c' in topics"
        let condition = try TopicCondition.parse(text)
        func walk(_ expression: TopicCondition.Expression, _ subscribed: Set<String>) -> Bool {
            switch expression {
            case .topic(let name): subscribed.contains(name)
            case .not(let inner): !walk(inner, subscribed)
            case .and(let lhs, let rhs): walk(lhs, subscribed) && walk(rhs, subscribed)
            case .or(let lhs, let rhs): walk(lhs, subscribed) || walk(rhs, subscribed)
            }
        }
        for mask in 0..<8 {
            let subscribed = Set(["a", "b", "c"].enumerated().filter { mask & (1 << $0.offset) != 0 }.map(\.element))
            #expect(condition.evaluate(subscribedTopics: subscribed) == walk(condition.expression, subscribed))
        }
    }
}
