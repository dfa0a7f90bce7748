extension PushRelayConfiguration: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `key=value` for every field, secrets masked: safe to log.
    public var description: String {
        "PushRelayConfiguration("
            + ConfigurationField.allCases.map { "\($0.key)=\(renderedValue(of: $0, masked: true) ?? "unset")" }
                .joined(separator: ", ")
            + ")"
    }

    /// The same as ``description``: secrets stay masked in `String(reflecting:)` and debuggers' summaries.
    public var debugDescription: String { description }

    /// Fields with secrets masked, so that `dump(configuration)` does not print a password.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: ConfigurationField.allCases.map { ($0.key, renderedValue(of: $0, masked: true) ?? "unset") },
            displayStyle: .struct
        )
    }

    /// The fields whose values differ between `self` and `other`, e.g. to tell after a SIGHUP which changes apply
    /// now (``ConfigurationField/isReloadable``) and which need a restart.
    public func changedFields(comparedTo other: PushRelayConfiguration) -> [ConfigurationField] {
        ConfigurationField.allCases.filter {
            renderedValue(of: $0, masked: false) != other.renderedValue(of: $0, masked: false)
        }
    }
}
