/// Why a JSON text could not be parsed, with the byte position where the parser stopped.
///
/// ``message`` is the text FCM answers with in a `400` body, e.g.
/// `JSON_PARSING_ERROR: Unexpected character (x) at position 0.`
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case unexpectedCharacter, unexpectedEnd, invalidUTF8, invalidEscape, tooDeep, tooLarge, duplicateKey
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A byte that cannot start or continue the value at this point.
        public static let unexpectedCharacter = Code(.unexpectedCharacter)
        /// The input ended inside a value (also: an empty body).
        public static let unexpectedEnd = Code(.unexpectedEnd)
        /// A string is not valid UTF-8.
        public static let invalidUTF8 = Code(.invalidUTF8)
        /// A `\u` escape is malformed or leaves a lone UTF-16 surrogate.
        public static let invalidEscape = Code(.invalidEscape)
        /// Arrays and objects are nested deeper than ``JSONParseLimits/maxDepth``.
        public static let tooDeep = Code(.tooDeep)
        /// The input is longer than ``JSONParseLimits/maxBytes``.
        public static let tooLarge = Code(.tooLarge)
        /// A key appears twice in one object (only with ``JSONParseLimits/rejectsDuplicateKeys``).
        public static let duplicateKey = Code(.duplicateKey)

        public var description: String { base.rawValue }
    }

    /// The kind of problem.
    public let code: Code
    /// The byte offset (from 0) where the problem was found.
    public let position: Int
    /// The offending character as shown in ``message`` (for ``Code/unexpectedCharacter``), or the repeated key (for
    /// ``Code/duplicateKey``).
    public let character: String?
    /// The limit that was exceeded (for ``Code/tooDeep`` and ``Code/tooLarge``).
    public let limit: Int?

    init(code: Code, position: Int, character: String? = nil, limit: Int? = nil) {
        self.code = code
        self.position = position
        self.character = character
        self.limit = limit
    }

    /// FCM's plain-text form of the error: `JSON_PARSING_ERROR: <reason> at position <n>.`
    public var message: String {
        let reason: String
        switch code {
        case .unexpectedCharacter: reason = "Unexpected character (\(character ?? "?"))"
        case .unexpectedEnd: reason = "Unexpected end of input"
        case .invalidUTF8: reason = "Invalid UTF-8"
        case .invalidEscape: reason = "Invalid escape sequence"
        case .tooDeep: reason = "Nesting deeper than \(limit ?? 0) levels"
        case .duplicateKey: reason = "Duplicate field \"\(character ?? "")\""
        default: reason = "Input longer than \(limit ?? 0) bytes"
        }
        return "JSON_PARSING_ERROR: \(reason) at position \(position)."
    }

    public var description: String { message }
}
