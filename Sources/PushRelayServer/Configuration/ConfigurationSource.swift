/// Where a configuration value came from; named in every error and in `check-config`'s output.
public enum ConfigurationSource: Sendable, Hashable, CustomStringConvertible {
    /// The built-in default.
    case defaultValue
    /// A line of the config file.
    case file(path: String, line: Int)
    /// An environment variable.
    case environment(variable: String)
    /// A command-line flag.
    case commandLine(flag: String)

    /// `default`, `/etc/pushrelay/pushrelay.conf:12`, `environment PUSHRELAY_LISTEN`, `flag --listen`.
    public var description: String {
        switch self {
        case .defaultValue: "default"
        case .file(let path, let line): line > 0 ? "\(path):\(line)" : path
        case .environment(let variable): "environment \(variable)"
        case .commandLine(let flag): "flag \(flag)"
        }
    }
}
