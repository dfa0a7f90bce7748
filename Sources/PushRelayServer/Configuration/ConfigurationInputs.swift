import Configuration
import NIOConcurrencyHelpers
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Flags and environment as swift-configuration providers, and the checks swift-configuration leaves to its user:
/// unknown flags, stray arguments, unknown `PUSHRELAY_*` variables.
struct ConfigurationInputs: Sendable {
    /// The config file as a provider, with the snapshot it holds (for line numbers and unknown keys).
    struct File {
        var path: String
        var provider: any ConfigProvider
        var snapshot: ConfigurationFile? { provider.snapshot() as? ConfigurationFile }
    }

    let commandLine: CommandLineArgumentsProvider
    let environmentProvider: KeyMappingProvider<EnvironmentVariablesProvider>
    let environment: [String: String]
    /// The config file named by `--config` or `PUSHRELAY_CONFIG`.
    let configFile: String?
    /// Unknown flags, stray arguments, a `--config` without a path.
    let problems: [ConfigurationError.Problem]
    /// Unknown `PUSHRELAY_*` variables.
    let warnings: [String]
    /// Fields whose flag is given without a value (`--heartbeat-interval` last, or before another flag).
    let flagsWithoutValue: Set<ConfigurationField>

    init(arguments: [String], environment: [String: String]) {
        var problems: [ConfigurationError.Problem] = []
        // The provider skips a program name, and reads `--tls-certificate` where an alias (`--tls-cert`) was written.
        var normalized = ["pushrelay"]
        var flagsWithoutValue: Set<ConfigurationField> = []
        for (index, argument) in arguments.enumerated() {
            guard argument.hasPrefix("--") else {
                // Words after a flag are its values; only a first word belongs to no flag.
                if index == 0 {
                    problems.append(.init(
                        code: .unknownFlag,
                        field: nil,
                        source: .commandLine(flag: argument),
                        message: "unexpected argument '\(argument)'; flags are written --name value"
                    ))
                }
                normalized.append(argument)
                continue
            }
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            if name == ConfigurationLoader.configFileFlag {
                normalized.append(argument)
                continue
            }
            guard let field = ConfigurationField(flag: name) else {
                problems.append(.init(
                    code: .unknownFlag,
                    field: nil,
                    source: .commandLine(flag: name),
                    message: "unknown flag \(name)" + Self.suggestion(for: name, in: ConfigurationField.allCases.map(\.flag))
                ))
                normalized.append(argument)
                continue
            }
            normalized.append(field.flag + argument.dropFirst(name.count))
            if name == argument, index + 1 == arguments.count || arguments[index + 1].hasPrefix("--") {
                flagsWithoutValue.insert(field)
            }
        }
        self.flagsWithoutValue = flagsWithoutValue
        commandLine = CommandLineArgumentsProvider(
            arguments: normalized,
            secretsSpecifier: .specific(Set(ConfigurationField.allCases.filter(\.isSecret).map(\.flag)))
        )
        environmentProvider = EnvironmentVariablesProvider(
            environmentVariables: environment,
            secretsSpecifier: .specific(Set(ConfigurationField.allCases.filter(\.isSecret).map(\.environmentVariable)))
        ).prefixKeys(with: "pushrelay")
        self.environment = environment

        let fileKey = ConfigKey("config")
        let path = ConfigReader(providers: [commandLine, environmentProvider]).string(forKey: fileKey)
        configFile = path.flatMap { $0.isEmpty ? nil : $0 }
        if configFile == nil,
            arguments.contains(where: { $0 == ConfigurationLoader.configFileFlag || $0.hasPrefix("--config=") })
        {
            problems.append(.init(
                code: .missingValue,
                field: nil,
                source: .commandLine(flag: ConfigurationLoader.configFileFlag),
                message: "--config needs one file path (none, or more than one, was given)"
            ))
        }
        self.problems = problems

        let known = Set(ConfigurationField.allCases.map(\.environmentVariable))
        warnings = environment.keys.filter {
            $0.hasPrefix("PUSHRELAY_") && !known.contains($0) && $0 != ConfigurationLoader.configFileVariable
                && $0 != "PUSHRELAY_BIN"
        }.sorted().map { "environment \($0) is not a configuration field and is ignored" }
    }

    /// Opens the config file at `path` with `makeProvider` (a `FileProvider` or a `ReloadingFileProvider`), or
    /// says why it cannot be read.
    static func open(
        _ path: String,
        _ makeProvider: (String) async throws -> any ConfigProvider
    ) async throws(ConfigurationError) -> File {
        func problem(_ code: ConfigurationError.Code, line: Int = 0, _ message: String) -> ConfigurationError {
            ConfigurationError(problems: [.init(code: code, field: nil, source: .file(path: path, line: line), message: message)])
        }
        if let reason = FileChecks.unreadableReason(path) {
            throw problem(.unreadableFile, "cannot read the config file: '\(path)' \(reason)")
        }
        do {
            return File(path: path, provider: try await makeProvider(path))
        } catch let error as ConfigurationFile.SyntaxError {
            throw problem(.syntax, line: error.line, error.message)
        } catch {
            throw problem(.unreadableFile, "cannot read the config file: \(error)")
        }
    }

    /// Opens the config file named by `--config` or `PUSHRELAY_CONFIG` (if any) with `makeProvider` and evaluates
    /// every field; a file that cannot be opened is reported together with the flags' and environment's problems,
    /// so that one run names every problem. Returns the file too, for ``LiveConfiguration``'s reloads.
    func load(
        _ makeProvider: (String) async throws -> any ConfigProvider
    ) async throws(ConfigurationError) -> (LoadedConfiguration, File?) {
        guard let path = configFile else { return (try evaluate(file: nil), nil) }
        let file: File
        do {
            file = try await Self.open(path, makeProvider)
        } catch {
            return (try evaluate(file: nil, fileProblems: error.problems), nil)
        }
        return (try evaluate(file: file), file)
    }

    /// Reads every field through one snapshot of the providers, then checks the fields against each other.
    func evaluate(
        file: File?,
        fileProblems: [ConfigurationError.Problem] = []
    ) throws(ConfigurationError) -> LoadedConfiguration {
        let recorder = LookupRecorder()
        var providers: [any ConfigProvider] = [commandLine, environmentProvider]
        if let file { providers.append(file.provider) }
        let reader = ConfigReader(providers: providers, accessReporter: recorder).snapshot()
        let fileSnapshot = file?.snapshot

        var builder = ConfigurationBuilder(environment: environment)
        builder.problems = problems + fileProblems
        builder.warnings = warnings
        if let file, let fileSnapshot {
            for entry in fileSnapshot.entries where ConfigurationField(key: entry.key) == nil {
                builder.problems.append(.init(
                    code: .unknownKey,
                    field: nil,
                    source: .file(path: file.path, line: entry.line),
                    message: "unknown key '\(entry.key)'"
                        + Self.suggestion(for: entry.key, in: ConfigurationField.allCases.map(\.key))
                ))
            }
        }
        for field in ConfigurationField.allCases {
            let key = ConfigKey(field.configKey)
            let raw: ConfigurationRawValue?
            switch field.valueShape {
            case .list:
                raw = reader.stringArray(forKey: key, isSecret: field.isSecret).map { items in
                    .array(items.map(\.trimmed).filter { !$0.isEmpty }.map { .string($0) })
                }
            case .switch:
                // A flag without a value (`--metrics-enabled`) is an empty list: true.
                raw = reader.stringArray(forKey: key).map { $0.count == 1 ? .string($0[0]) : $0.isEmpty ? .boolean(true) : .array($0.map { .string($0) }) }
            case .single:
                raw = reader.string(forKey: key, isSecret: field.isSecret).map { .string($0) }
            }
            guard let lookup = recorder.take() else { continue }
            let source: ConfigurationSource =
                switch lookup.providerIndex {
                case 0: .commandLine(flag: field.flag)
                case 1: .environment(variable: field.environmentVariable)
                default: .file(path: file?.path ?? "", line: fileSnapshot?.line(of: field.key) ?? 0)
                }
            if let failure = lookup.failure {
                if lookup.providerIndex == 0, flagsWithoutValue.contains(field) {
                    builder.problems.append(.init(
                        code: .missingValue, field: field, source: source,
                        message: "\(field.flag) needs a value (\(field.summary))"))
                } else {
                    let message =
                        (failure as? ConfigurationFile.ShapeError)?.message ?? "expected one value: \(field.summary)"
                    builder.problems.append(.init(code: .invalidValue, field: field, source: source, message: message))
                }
            } else if let raw {
                builder.apply(field, raw, from: source)
            }
        }
        // Reported in source order: the file's problems, then the environment's, then the flags'.
        builder.problems = builder.problems.enumerated().sorted { a, b in
            (a.element.source.rank, a.offset) < (b.element.source.rank, b.offset)
        }.map(\.element)
        builder.validate()
        if !builder.problems.isEmpty {
            throw ConfigurationError(problems: builder.problems)
        }
        return LoadedConfiguration(
            configuration: builder.configuration,
            sources: builder.sources,
            configFile: file?.path ?? configFile,
            warnings: builder.warnings
        )
    }

    /// ` (did you mean --listen-tls?)` when a known name is close to the mistyped one.
    static func suggestion(for name: String, in candidates: [String]) -> String {
        let best = candidates.min { editDistance($0, name) < editDistance($1, name) }
        guard let best, editDistance(best, name) <= 3 else { return "" }
        return " (did you mean \(best)?)"
    }

    private static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}

/// Which provider answered the last lookup (its index in precedence order), or failed it: the source of a value.
private final class LookupRecorder: AccessReporter {
    struct Lookup: Sendable {
        var providerIndex: Int
        var failure: (any Error)?
    }

    private let last = NIOLockedValueBox<Lookup?>(nil)

    func report(_ event: AccessEvent) {
        var lookup: Lookup?
        if let index = event.providerResults.indices.last {
            switch event.providerResults[index].result {
            case .failure(let error):
                lookup = Lookup(providerIndex: index, failure: error)
            case .success(let result) where result.value != nil:
                lookup = Lookup(providerIndex: index, failure: event.conversionError)
            case .success:
                lookup = nil
            }
        }
        last.withLockedValue { $0 = lookup }
    }

    /// The last lookup's provider, once; `nil` when no provider had a value.
    func take() -> Lookup? {
        last.withLockedValue { value in
            defer { value = nil }
            return value
        }
    }
}

extension ConfigurationSource {
    /// The order problems are reported in: the file's, the environment's, the flags', then the checks'.
    fileprivate var rank: Int {
        switch self {
        case .file: 0
        case .environment: 1
        case .commandLine: 2
        case .defaultValue: 3
        }
    }
}
