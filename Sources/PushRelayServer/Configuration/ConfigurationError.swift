/// The configuration could not be loaded: one or more problems, each naming its field and source.
///
/// The loader reports every problem it finds, not just the first, so that one `check-config` run shows them all.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    /// One thing wrong with the configuration.
    public struct Problem: Sendable, Hashable, CustomStringConvertible {
        /// What kind of problem.
        public var code: Code
        /// The field concerned, when the problem is about one (not for a syntax error or an unknown key).
        public var field: ConfigurationField?
        /// Where the offending value was read.
        public var source: ConfigurationSource
        /// What is wrong, in words; never contains a secret value.
        public var message: String

        /// `<source>: <field>: <message>`, e.g. `environment PUSHRELAY_LISTEN: listen: invalid port '99999' …`.
        public var description: String {
            if let field {
                return "\(source): \(field.key): \(message)"
            }
            return "\(source): \(message)"
        }
    }

    /// The kind of a ``Problem``.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String {
            case invalidValue = "invalid value"
            case unknownKey = "unknown key"
            case unknownFlag = "unknown flag"
            case syntax = "syntax error"
            case unreadableFile = "unreadable file"
            case missingValue = "missing value"
            case unsupported = "unsupported"
        }

        private let value: Value

        private init(_ value: Value) {
            self.value = value
        }

        /// A value that does not parse or is out of range.
        public static let invalidValue = Code(.invalidValue)
        /// A key in the config file that is no field.
        public static let unknownKey = Code(.unknownKey)
        /// A command-line flag that is no field.
        public static let unknownFlag = Code(.unknownFlag)
        /// The config file is not in the accepted syntax.
        public static let syntax = Code(.syntax)
        /// The config file, a certificate or a key cannot be read.
        public static let unreadableFile = Code(.unreadableFile)
        /// A value that another one requires is absent (e.g. `tls_certificate` for `listen_tls`).
        public static let missingValue = Code(.missingValue)
        /// A valid value that this build cannot act on (e.g. `store = "postgres"`).
        public static let unsupported = Code(.unsupported)

        /// The code's name, e.g. `invalid value`.
        public var description: String { value.rawValue }
    }

    /// Every problem found, in the order found (file, then environment, then flags, then cross-field checks).
    public var problems: [Problem]

    /// An error with these problems.
    public init(problems: [Problem]) {
        self.problems = problems
    }

    /// One line per problem.
    public var description: String {
        problems.map(\.description).joined(separator: "\n")
    }
}
