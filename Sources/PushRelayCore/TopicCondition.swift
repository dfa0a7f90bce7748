/// A parsed `condition` of a send: topics combined with `&&`, `||`, `!` and parentheses.
///
/// Grammar (whitespace allowed between tokens):
///
///     condition := or
///     or        := and ( "||" and )*
///     and       := unary ( "&&" unary )*
///     unary     := "!" unary | "(" or ")" | topic
///     topic     := ( "'" name "'" | "\"" name "\"" ) "in" "topics"
///
/// `&&` binds tighter than `||`, as in C. `!` is an extension (some FCM libraries generate it; Google never
/// documented it). At most ``FCMLimits/maxConditionTopics`` topic references (5); names follow ``TopicName``.
/// A malformed condition throws ``TopicConditionError``, which the send answers as `InvalidParameters`.
///
/// Hostile input is bounded before any work: a condition longer than ``FCMLimits/maxConditionLength`` bytes is
/// refused unread, and `!` and `(` together nest at most ``FCMLimits/maxConditionNesting`` deep, so parsing, the
/// tree's teardown and ``evaluate(subscribedTopics:)`` (an iterative walk of a postfix program) never recurse
/// deeper than a few dozen frames whatever the input.
public struct TopicCondition: Sendable, Hashable, CustomStringConvertible {
    /// A node of the expression tree.
    public indirect enum Expression: Sendable, Hashable {
        /// `'name' in topics`.
        case topic(String)
        /// `!e`.
        case not(Expression)
        /// `a && b`.
        case and(Expression, Expression)
        /// `a || b`.
        case or(Expression, Expression)
    }

    /// The expression tree.
    public let expression: Expression
    /// Every topic the condition names (the subscriptions a fan-out must look at).
    public let topics: Set<String>
    /// The condition as sent.
    public let text: String
    /// The expression in postfix order, which ``evaluate(subscribedTopics:)`` runs with a stack.
    private let program: [Instruction]

    /// One step of the postfix program.
    fileprivate enum Instruction: Sendable, Hashable {
        case topic(String)
        case not
        case and
        case or
    }

    private init(expression: Expression, topics: Set<String>, text: String, program: [Instruction]) {
        self.expression = expression
        self.topics = topics
        self.text = text
        self.program = program
    }

    /// Parses a condition.
    public static func parse(_ text: String) throws(TopicConditionError) -> TopicCondition {
        guard text.utf8.count <= FCMLimits.maxConditionLength else {
            throw TopicConditionError("longer than \(FCMLimits.maxConditionLength) bytes", at: FCMLimits.maxConditionLength)
        }
        var parser = TopicConditionParser(bytes: Array(text.utf8))
        let expression = try parser.parseCondition()
        return TopicCondition(expression: expression, topics: parser.topics, text: text, program: parser.program)
    }

    /// Whether a device subscribed to `subscribedTopics` receives the message.
    public func evaluate(subscribedTopics: Set<String>) -> Bool {
        var stack: [Bool] = []
        stack.reserveCapacity(program.count)
        for instruction in program {
            switch instruction {
            case .topic(let name): stack.append(subscribedTopics.contains(name))
            case .not: stack.append(!stack.removeLast())
            case .and:
                let rhs = stack.removeLast()
                stack.append(stack.removeLast() && rhs)
            case .or:
                let rhs = stack.removeLast()
                stack.append(stack.removeLast() || rhs)
            }
        }
        return stack.last ?? false
    }

    /// Whether a device with no subscription at all would match (only possible with `!`); a fan-out must then
    /// consider every device of the project, not just the subscribers of ``topics``.
    public var matchesUnsubscribed: Bool { evaluate(subscribedTopics: []) }

    public var description: String { text }
}

/// Why a condition is malformed.
public struct TopicConditionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, with the byte position, e.g. `Invalid condition: expected "in topics" at position 4`.
    public let reason: String
    /// The byte offset where parsing stopped.
    public let position: Int

    init(_ what: String, at position: Int) {
        self.reason = "Invalid condition: \(what) at position \(position)"
        self.position = position
    }

    public var description: String { reason }
}

/// Recursive-descent parser for ``TopicCondition``; its recursion is bounded by ``FCMLimits/maxConditionNesting``
/// (each `!` and `(` counts one level) and by the topic limit (each `&&`/`||` needs a further topic).
struct TopicConditionParser {
    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0
    private(set) var topics: Set<String> = []
    private var topicCount = 0
    /// The expression in postfix order, built as the parser reduces.
    fileprivate var program: [TopicCondition.Instruction] = []

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func parseCondition() throws(TopicConditionError) -> TopicCondition.Expression {
        let expression = try parseOr()
        skipSpaces()
        guard index == bytes.count else { throw TopicConditionError("unexpected \(found())", at: index) }
        return expression
    }

    private mutating func parseOr() throws(TopicConditionError) -> TopicCondition.Expression {
        var lhs = try parseAnd()
        while consume("||") {
            lhs = .or(lhs, try parseAnd())
            program.append(.or)
        }
        return lhs
    }

    private mutating func parseAnd() throws(TopicConditionError) -> TopicCondition.Expression {
        var lhs = try parseUnary()
        while consume("&&") {
            lhs = .and(lhs, try parseUnary())
            program.append(.and)
        }
        return lhs
    }

    private mutating func parseUnary() throws(TopicConditionError) -> TopicCondition.Expression {
        skipSpaces()
        if consume("!") {
            try enterLevel()
            let inner = try parseUnary()
            depth -= 1
            program.append(.not)
            return .not(inner)
        }
        if consume("(") {
            try enterLevel()
            let inner = try parseOr()
            guard consume(")") else { throw TopicConditionError("expected \")\", found \(found())", at: index) }
            depth -= 1
            return inner
        }
        return try parseTopic()
    }

    /// One more level of `!` or `(`; five topics need only a few, the bound keeps hostile input from recursing.
    private mutating func enterLevel() throws(TopicConditionError) {
        depth += 1
        guard depth <= FCMLimits.maxConditionNesting else {
            throw TopicConditionError("nested deeper than \(FCMLimits.maxConditionNesting) levels", at: index - 1)
        }
    }

    private mutating func parseTopic() throws(TopicConditionError) -> TopicCondition.Expression {
        skipSpaces()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "'") || bytes[index] == UInt8(ascii: "\"") else {
            throw TopicConditionError("expected a quoted topic name, found \(found())", at: index)
        }
        let quote = bytes[index]
        let start = index + 1
        var end = start
        while end < bytes.count, bytes[end] != quote { end += 1 }
        guard end < bytes.count else { throw TopicConditionError("unterminated topic name", at: index) }
        let name = String(decoding: bytes[start..<end], as: UTF8.self)
        guard TopicName.isValidName(name) else { throw TopicConditionError("invalid topic name '\(name)'", at: start) }
        index = end + 1
        guard consumeWord("in"), consumeWord("topics") else {
            skipSpaces()
            throw TopicConditionError("expected \"in topics\", found \(found())", at: index)
        }
        topicCount += 1
        guard topicCount <= FCMLimits.maxConditionTopics else {
            throw TopicConditionError("more than \(FCMLimits.maxConditionTopics) topics", at: start - 1)
        }
        topics.insert(name)
        program.append(.topic(name))
        return .topic(name)
    }

    /// Consumes `token` after optional spaces.
    private mutating func consume(_ token: StaticString) -> Bool {
        skipSpaces()
        let count = token.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        let matches = token.withUTF8Buffer { buffer in
            (0..<count).allSatisfy { bytes[index + $0] == buffer[$0] }
        }
        if matches { index += count }
        return matches
    }

    /// Consumes a keyword that must be followed by a non-letter.
    private mutating func consumeWord(_ word: StaticString) -> Bool {
        let saved = index
        guard consume(word) else { return false }
        if index < bytes.count, Self.isLetter(bytes[index]) {
            index = saved
            return false
        }
        return true
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }

    private mutating func skipSpaces() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A
            || bytes[index] == 0x0D
        {
            index += 1
        }
    }

    private func found() -> String {
        guard index < bytes.count else { return "end of condition" }
        return "'" + String(decoding: bytes[index..<min(bytes.count, index + 1)], as: UTF8.self) + "'"
    }
}
