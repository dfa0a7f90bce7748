public import Logging
import NIOConcurrencyHelpers

/// The process-wide log level, changeable at run time (SIGHUP reload of `log_level`).
///
/// Every ``RelayLogHandler`` reads it on each check, so a change applies to all existing loggers at once.
public final class LogLevelControl: Sendable {
    private let box: NIOLockedValueBox<Logger.Level>

    /// A control starting at `level`.
    public init(_ level: Logger.Level) {
        self.box = NIOLockedValueBox(level)
    }

    /// The current level.
    public var level: Logger.Level {
        get { box.withLockedValue { $0 } }
        set { box.withLockedValue { $0 = newValue } }
    }
}

extension PushRelayConfiguration.LogLevel {
    /// The swift-log level of the same name.
    public var loggerLevel: Logger.Level {
        switch self {
        case .trace: .trace
        case .debug: .debug
        case .info: .info
        case .notice: .notice
        case .warning: .warning
        case .error: .error
        case .critical: .critical
        }
    }
}
