public import Logging
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The daemon's log handler: one line per event on standard error, as `text` or `json` (`log_format`), at the
/// run-time level of a shared ``LogLevelControl``.
///
/// Under systemd (`$JOURNAL_STREAM` set) text lines start with a `<N>` syslog priority, which journald turns into
/// the entry's priority (`journalctl -p warning` works), and carry no timestamp (journald adds its own). Otherwise
/// they start with an ISO 8601 UTC timestamp. Metadata keys are sorted, so lines are stable for grep and tests.
public struct RelayLogHandler: LogHandler {
    /// Where finished lines go; standard error by default, a closure in tests.
    public typealias Output = @Sendable (String) -> Void

    private let label: String
    private let format: PushRelayConfiguration.LogFormat
    private let control: LogLevelControl
    private let journal: Bool
    private let output: Output
    private var levelOverride: Logger.Level?

    /// Metadata attached to every line of this logger.
    public var metadata: Logger.Metadata = [:]
    /// Contextual metadata (task-locals), merged under ``metadata``.
    public var metadataProvider: Logger.MetadataProvider?

    /// A handler for `label`.
    /// - Parameters:
    ///   - journal: whether standard error goes to journald (pass `environment["JOURNAL_STREAM"] != nil`).
    ///   - output: the line sink; defaults to standard error, one `write(2)` per line.
    public init(
        label: String,
        format: PushRelayConfiguration.LogFormat,
        control: LogLevelControl,
        journal: Bool,
        metadataProvider: Logger.MetadataProvider? = nil,
        output: @escaping Output = RelayLogHandler.standardError
    ) {
        self.label = label
        self.format = format
        self.control = control
        self.journal = journal
        self.metadataProvider = metadataProvider
        self.output = output
    }

    /// The shared level, unless this logger's level was set explicitly.
    public var logLevel: Logger.Level {
        get { levelOverride ?? control.level }
        set { levelOverride = newValue }
    }

    /// One metadata value of this logger.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Formats and writes one event.
    public func log(event: LogEvent) {
        var merged = metadataProvider?.get() ?? [:]
        merged.merge(metadata) { $1 }
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        if let error = event.error { merged["error"] = "\(error)" }
        switch format {
        case .text: output(textLine(event, merged))
        case .json: output(jsonLine(event, merged))
        }
    }

    // MARK: Formats

    func textLine(_ event: LogEvent, _ metadata: Logger.Metadata) -> String {
        var line = journal ? "<\(Self.syslogPriority(event.level))>" : Self.timestamp() + " "
        line += "\(event.level) \(label): \(event.message)"
        for key in metadata.keys.sorted() {
            line += " \(key)=\(Self.textValue(metadata[key]!))"
        }
        return line + "\n"
    }

    func jsonLine(_ event: LogEvent, _ metadata: Logger.Metadata) -> String {
        var line = "{\"time\":\"\(Self.timestamp())\",\"level\":\"\(event.level)\""
        line += ",\"label\":" + Self.jsonString(label) + ",\"message\":" + Self.jsonString("\(event.message)")
        for key in metadata.keys.sorted() {
            line += "," + Self.jsonString(key) + ":" + Self.jsonValue(metadata[key]!)
        }
        return line + "}\n"
    }

    /// sd-daemon priorities: 7 debug … 2 critical.
    static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    private static func textValue(_ value: Logger.Metadata.Value) -> String {
        let text = "\(value)"
        guard text.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline }) || text.isEmpty else {
            return text
        }
        return jsonString(text)
    }

    private static func jsonValue(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text): return jsonString(text)
        case .stringConvertible(let convertible): return jsonString(convertible.description)
        case .array(let values): return "[" + values.map(jsonValue).joined(separator: ",") + "]"
        case .dictionary(let dictionary):
            let fields = dictionary.keys.sorted().map { jsonString($0) + ":" + jsonValue(dictionary[$0]!) }
            return "{" + fields.joined(separator: ",") + "}"
        }
    }

    static func jsonString(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    /// `2026-11-22T04:10:05.123Z`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))."
            + "\(pad(Int32(now.tv_nsec / 1_000_000), 3))Z"
    }

    /// Writes `line` to file descriptor 2 in one call (lines from several threads do not interleave).
    public static let standardError: Output = { line in
        let bytes = Array(line.utf8)
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(2, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 {
                    if written < 0 && errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }
}

/// Sets up swift-log for the daemon from the configuration.
public enum RelayLogging {
    /// Bootstraps `LoggingSystem` with ``RelayLogHandler`` (call once per process, before the first `Logger`) and
    /// returns the level control that a SIGHUP reload sets from the new `log_level`.
    public static func bootstrap(
        configuration: PushRelayConfiguration,
        environment: [String: String],
        metadataProvider: Logger.MetadataProvider? = nil
    ) -> LogLevelControl {
        let control = LogLevelControl(configuration.logLevel.loggerLevel)
        let format = configuration.logFormat
        let journal = environment["JOURNAL_STREAM"] != nil
        LoggingSystem.bootstrap(
            { label, provider in
                RelayLogHandler(
                    label: label,
                    format: format,
                    control: control,
                    journal: journal,
                    metadataProvider: provider
                )
            },
            metadataProvider: metadataProvider
        )
        return control
    }
}
