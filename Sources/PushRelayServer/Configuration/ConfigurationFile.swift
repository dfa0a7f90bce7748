public import Configuration

/// The config file (the format of `deploy/pushrelay.conf`, parsed by ``ConfigurationFileParser``) as a
/// swift-configuration snapshot: what `FileProvider` reads for `check-config` and the project commands, and what
/// `ReloadingFileProvider` re-reads on SIGHUP for `serve`.
///
/// The file's keys are the fields' file keys (`heartbeat_interval`); a lookup by a field's configuration key
/// (``ConfigurationField/configKey``, `heartbeatInterval`) answers the file's value converted to the type asked: an
/// integer or a boolean as text when text is asked, a scalar as a one-item list (split at commas) when a list is.
public struct ConfigurationFile: FileConfigSnapshot {
    /// No options: the format has none.
    public struct ParsingOptions: FileParsingOptions {
        /// The only options.
        public static let `default` = ParsingOptions()
    }

    /// Why the file cannot be read: a syntax error on a line, or bytes that are not UTF-8.
    public struct SyntaxError: Error, Sendable, CustomStringConvertible {
        /// The line the error is on (1-based), or 0 for the whole file.
        public var line: Int
        /// What is wrong, in words.
        public var message: String
        /// `line 3: expected '=' after key 'listen'`.
        public var description: String { line > 0 ? "line \(line): \(message)" : message }
    }

    /// A value whose shape does not fit the field (a list where one value is expected).
    struct ShapeError: Error, Sendable, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    public let providerName: String
    /// The `key = value` lines in file order.
    let entries: [ConfigurationEntry]
    /// The file's bytes, to tell whether the provider holds the file as it is on disk now.
    let contents: [UInt8]
    private let byKey: [String: ConfigurationEntry]

    public init(data: RawSpan, providerName: String, parsingOptions: ParsingOptions) throws {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(data.byteCount)
        data.withUnsafeBytes { bytes.append(contentsOf: $0) }
        try self.init(contents: bytes, providerName: providerName)
    }

    /// The file from its bytes.
    init(contents: [UInt8], providerName: String = "ConfigurationFile") throws(SyntaxError) {
        guard let text = String(validating: contents, as: UTF8.self) else {
            throw SyntaxError(line: 0, message: "the file is not UTF-8 text")
        }
        do {
            entries = try ConfigurationFileParser.parse(text)
        } catch {
            throw SyntaxError(line: error.line, message: error.message)
        }
        self.contents = contents
        self.providerName = providerName
        byKey = Dictionary(entries.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The line `key` is set on, or `nil` when the file does not set it.
    func line(of key: String) -> Int? {
        byKey[key]?.line
    }

    public func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        let field = key.components.count == 1 ? ConfigurationField(configKey: key.components[0]) : nil
        let fileKey = field?.key ?? key.description
        guard let entry = byKey[fileKey] else {
            return LookupResult(encodedKey: fileKey, value: nil)
        }
        let content = try Self.content(of: entry.value, as: type)
        return LookupResult(encodedKey: fileKey, value: ConfigValue(content, isSecret: field?.isSecret ?? false))
    }

    /// `value` as `type`: text from any scalar, a list from an array or from text split at commas, a boolean from
    /// `true`/`false`, an integer from digits.
    private static func content(of value: ConfigurationRawValue, as type: ConfigType) throws(ShapeError) -> ConfigContent {
        switch type {
        case .string:
            return .string(try text(value))
        case .stringArray:
            if case .array(let elements) = value {
                var items: [String] = []
                for element in elements { items.append(try text(element)) }
                return .stringArray(items)
            }
            return .stringArray(
                try text(value).split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmed })
        case .bool:
            switch value {
            case .boolean(let flag): return .bool(flag)
            case .string("true"): return .bool(true)
            case .string("false"): return .bool(false)
            default: throw ShapeError(message: "expected true or false")
            }
        case .int:
            if case .integer(let number) = value { return .int(number) }
            guard let number = Int(try text(value)) else { throw ShapeError(message: "expected a whole number") }
            return .int(number)
        default:
            throw ShapeError(message: "no field of this kind is read from the config file")
        }
    }

    private static func text(_ value: ConfigurationRawValue) throws(ShapeError) -> String {
        switch value {
        case .string(let text): return text
        case .integer(let number): return String(number)
        case .boolean(let flag): return String(flag)
        case .array: throw ShapeError(message: "expected a single value, not a list")
        }
    }

    public var description: String {
        "ConfigurationFile[\(entries.count) values]"
    }

    public var debugDescription: String {
        let values = entries.map { entry in
            ConfigurationField(key: entry.key)?.isSecret == true ? "\(entry.key)=<REDACTED>" : "\(entry.key)=\(entry.value)"
        }
        return "ConfigurationFile[\(values.joined(separator: ", "))]"
    }
}
