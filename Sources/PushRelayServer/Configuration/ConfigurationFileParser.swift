/// A value as written in the config file, or as text from the environment or a flag.
enum ConfigurationRawValue: Sendable, Equatable {
    case string(String)
    case integer(Int)
    case boolean(Bool)
    case array([ConfigurationRawValue])
}

/// One `key = value` line of the config file.
struct ConfigurationEntry: Sendable, Equatable {
    var key: String
    var value: ConfigurationRawValue
    var line: Int
}

/// Parses the config file format: a subset of TOML with top-level keys only.
///
/// Accepted: `# comments`, blank lines, `key = value` where the value is a `"basic string"` (escapes `\" \\ \n \t
/// \uXXXX`), a `'literal string'`, an integer (`1_000` allowed), `true`/`false`, or an array of these
/// (`["a", "b"]`, which may span lines and end with a comma). Tables (`[section]`), floats, dates and inline
/// tables are rejected with the line number. A duplicate key is an error, as in TOML.
struct ConfigurationFileParser {
    struct SyntaxError: Error, Equatable {
        var line: Int
        var message: String
    }

    static func parse(_ text: String) throws(SyntaxError) -> [ConfigurationEntry] {
        var entries: [ConfigurationEntry] = []
        var seen: [String: Int] = [:]
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.hasSuffix("\r") ? String($0.dropLast()) : String($0)
        }
        var index = 0
        while index < lines.count {
            let lineNumber = index + 1
            var statement = lines[index]
            index += 1
            var scanner = Scanner(statement)
            scanner.skipWhitespace()
            if scanner.isAtEnd || scanner.peek == "#" { continue }
            if scanner.peek == "[" {
                throw SyntaxError(
                    line: lineNumber,
                    message: "tables ([section]) are not supported; write every key at the top level"
                )
            }
            // An array may span lines: join lines until its brackets balance (counted line by line, so a file of
            // unbalanced brackets costs linear time).
            var open = Self.openBrackets(statement)
            while open > 0 && index < lines.count {
                statement += "\n" + lines[index]
                open += Self.openBrackets(lines[index])
                index += 1
            }
            scanner = Scanner(statement)
            let entry = try Self.parseStatement(&scanner, line: lineNumber)
            if let previous = seen[entry.key] {
                throw SyntaxError(line: lineNumber, message: "key '\(entry.key)' is already set on line \(previous)")
            }
            seen[entry.key] = lineNumber
            entries.append(entry)
        }
        return entries
    }

    private static func parseStatement(_ scanner: inout Scanner, line: Int) throws(SyntaxError) -> ConfigurationEntry {
        scanner.skipWhitespace()
        let key = scanner.take { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }
        guard !key.isEmpty else {
            throw SyntaxError(line: line, message: "expected 'key = value'")
        }
        scanner.skipWhitespace()
        guard scanner.consume("=") else {
            throw SyntaxError(line: line, message: "expected '=' after key '\(key)'")
        }
        scanner.skipWhitespace(newlines: false)
        let value = try parseValue(&scanner, line: line, key: key)
        scanner.skipWhitespace(newlines: false)
        if !scanner.isAtEnd && scanner.peek != "#" {
            throw SyntaxError(line: line, message: "unexpected text after the value of '\(key)'")
        }
        return ConfigurationEntry(key: key, value: value, line: line)
    }

    private static func parseValue(
        _ scanner: inout Scanner,
        line: Int,
        key: String
    ) throws(SyntaxError) -> ConfigurationRawValue {
        guard let first = scanner.peek else {
            throw SyntaxError(line: line, message: "missing value for '\(key)'")
        }
        switch first {
        case "\"":
            return .string(try parseBasicString(&scanner, line: line))
        case "'":
            scanner.advance()
            let text = scanner.take { $0 != "'" && $0 != "\n" }
            guard scanner.consume("'") else {
                throw SyntaxError(line: line, message: "unterminated string for '\(key)'")
            }
            return .string(text)
        case "[":
            scanner.advance()
            var elements: [ConfigurationRawValue] = []
            while true {
                scanner.skipWhitespaceAndComments()
                if scanner.consume("]") { break }
                // Refused before recursing: `[[[[…` never nests deeper than one call.
                if scanner.peek == "[" {
                    throw SyntaxError(line: line, message: "nested arrays are not supported ('\(key)')")
                }
                let element = try parseValue(&scanner, line: line, key: key)
                elements.append(element)
                scanner.skipWhitespaceAndComments()
                if scanner.consume(",") { continue }
                if scanner.consume("]") { break }
                throw SyntaxError(line: line, message: "expected ',' or ']' in the array of '\(key)'")
            }
            return .array(elements)
        case "{":
            throw SyntaxError(line: line, message: "inline tables are not supported ('\(key)')")
        default:
            let word = scanner.take { !$0.isWhitespace && $0 != "," && $0 != "]" && $0 != "#" }
            if word == "true" { return .boolean(true) }
            if word == "false" { return .boolean(false) }
            let digits = word.filter { $0 != "_" }
            if !digits.isEmpty, let number = Int(digits), !word.hasPrefix("_"), !word.hasSuffix("_") {
                return .integer(number)
            }
            throw SyntaxError(
                line: line,
                message: "cannot read the value '\(word)' of '\(key)': write strings in double quotes, "
                    + "integers as digits, booleans as true or false"
            )
        }
    }

    private static func parseBasicString(_ scanner: inout Scanner, line: Int) throws(SyntaxError) -> String {
        scanner.advance()  // opening quote
        var result = ""
        while let character = scanner.peek {
            scanner.advance()
            switch character {
            case "\"":
                return result
            case "\n":
                throw SyntaxError(line: line, message: "unterminated string")
            case "\\":
                guard let escaped = scanner.peek else { break }
                scanner.advance()
                switch escaped {
                case "\"": result.append("\"")
                case "\\": result.append("\\")
                case "n": result.append("\n")
                case "t": result.append("\t")
                case "r": result.append("\r")
                case "u":
                    var hex = ""
                    for _ in 0..<4 {
                        guard let digit = scanner.peek, digit.isHexDigit else { break }
                        hex.append(digit)
                        scanner.advance()
                    }
                    guard hex.count == 4, let value = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(value) else {
                        throw SyntaxError(line: line, message: "invalid \\u escape in a string")
                    }
                    result.unicodeScalars.append(scalar)
                default:
                    throw SyntaxError(line: line, message: "invalid escape '\\\(escaped)' in a string")
                }
            default:
                result.append(character)
            }
        }
        throw SyntaxError(line: line, message: "unterminated string")
    }

    /// `[` minus `]` outside strings and comments: > 0 while an array is still open.
    private static func openBrackets(_ text: String) -> Int {
        var depth = 0
        var quote: Character?
        var escaped = false
        var inComment = false
        for character in text {
            if inComment {
                inComment = character != "\n"
                continue
            }
            if let open = quote {
                if escaped {
                    escaped = false
                } else if character == "\\" && open == "\"" {
                    escaped = true
                } else if character == open {
                    quote = nil
                }
                continue
            }
            switch character {
            case "\"", "'": quote = character
            case "#": inComment = true
            case "[": depth += 1
            case "]": depth -= 1
            default: break
            }
        }
        return depth
    }
}

/// A cursor over the characters of one statement.
private struct Scanner {
    private let characters: [Character]
    private var position = 0

    init(_ text: String) {
        self.characters = Array(text)
    }

    var isAtEnd: Bool { position >= characters.count }
    var peek: Character? { isAtEnd ? nil : characters[position] }

    mutating func advance() { position += 1 }

    mutating func consume(_ character: Character) -> Bool {
        guard peek == character else { return false }
        position += 1
        return true
    }

    mutating func take(while predicate: (Character) -> Bool) -> String {
        let start = position
        while let character = peek, predicate(character) { position += 1 }
        return String(characters[start..<position])
    }

    mutating func skipWhitespace(newlines: Bool = true) {
        while let character = peek, character == " " || character == "\t" || (newlines && character == "\n") {
            position += 1
        }
    }

    mutating func skipWhitespaceAndComments() {
        while true {
            skipWhitespace()
            guard peek == "#" else { return }
            while let character = peek, character != "\n" { position += 1 }
        }
    }
}
