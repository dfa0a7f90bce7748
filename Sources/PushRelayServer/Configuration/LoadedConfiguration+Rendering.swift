extension LoadedConfiguration {
    /// The effective configuration in the config-file format, one field per line with its source as a comment;
    /// secrets masked. What `pushrelay check-config` prints; without secrets it can be read back as a config file.
    public func renderEffective() -> String {
        var lines = ["# Effective PushRelay configuration (secrets masked)."]
        if let configFile { lines.append("# Config file: \(configFile)") }
        for field in ConfigurationField.allCases {
            let source = sources[field] ?? .defaultValue
            let value = configuration.renderedValue(of: field, masked: true)
            if let value {
                lines.append("\(field.key) = \(value)  # \(source)")
            } else {
                lines.append("# \(field.key) is not set  (\(source))")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension PushRelayConfiguration {
    /// The value of `field` in the config-file format (`"25s"`, `["127.0.0.1:8080"]`, `true`), or `nil` when unset.
    /// With `masked`, secrets show only their shape (``maskSecret(_:)``).
    public func renderedValue(of field: ConfigurationField, masked: Bool = true) -> String? {
        switch field {
        case .listen: return Self.renderList(listen.map(\.description))
        case .listenTLS: return Self.renderList(listenTLS.map(\.description))
        case .tlsCertificate: return tlsCertificatePath.map(Self.quote)
        case .tlsKey: return tlsKeyPath.map(Self.quote)
        case .dataDir: return Self.quote(dataDirectory)
        case .store: return Self.quote(store.rawValue)
        case .postgresURL: return postgresURL.map { Self.quote(masked ? Self.maskSecret($0) : $0) }
        case .postgresCommitTimeout: return Self.quote(Self.renderDuration(postgresCommitTimeout))
        case .postgresStatementTimeout: return Self.quote(Self.renderDuration(postgresStatementTimeout))
        case .postgresConnectTimeout: return Self.quote(Self.renderDuration(postgresConnectTimeout))
        case .postgresReadTimeout: return Self.quote(Self.renderDuration(postgresReadTimeout))
        case .postgresReadConnections: return String(postgresReadConnections)
        case .heartbeatInterval: return Self.quote(Self.renderDuration(heartbeatInterval))
        case .idleTimeout: return Self.quote(Self.renderDuration(idleTimeout))
        case .maxSendBodySize: return Self.quote(Self.renderSize(maxSendBodySize))
        case .maxRequestBodySize: return Self.quote(Self.renderSize(maxRequestBodySize))
        case .maxBufferedBodySize: return Self.quote(Self.renderSize(maxBufferedBodySize))
        case .maxPendingMessages: return String(maxPendingMessages)
        case .maxCollapseKeys: return String(maxCollapseKeys)
        case .purgeInterval: return Self.quote(Self.renderDuration(purgeInterval))
        case .serverKeyRotationGrace: return Self.quote(Self.renderDuration(serverKeyRotationGrace))
        case .authRecheckInterval: return Self.quote(Self.renderDuration(authRecheckInterval))
        case .logLevel: return Self.quote(logLevel.rawValue)
        case .logFormat: return Self.quote(logFormat.rawValue)
        case .metricsEnabled: return String(metricsEnabled)
        case .metricsInterval: return Self.quote(Self.renderDuration(metricsInterval))
        case .shutdownDrainTimeout: return Self.quote(Self.renderDuration(shutdownDrainTimeout))
        case .maxConnections: return String(maxConnections)
        case .maxConnectionsPerAddress: return String(maxConnectionsPerAddress)
        case .eventLoops: return String(eventLoops)
        case .commitOnEventLoop: return String(commitOnEventLoop)
        case .requestTimeout: return Self.quote(Self.renderDuration(requestTimeout))
        case .deviceMessageRate: return String(deviceMessageRate)
        case .topicMessageRate: return String(topicMessageRate)
        case .projectMessageRate: return String(projectMessageRate)
        case .registrationRate: return String(registrationRate)
        case .registrationRatePerAddress: return String(registrationRatePerAddress)
        case .maxDevicesPerProject: return String(maxDevicesPerProject)
        case .deviceExpiry: return Self.quote(deviceExpiry.map(Self.renderDuration) ?? "0")
        case .corsAllowedOrigins: return Self.renderList(corsAllowedOrigins)
        case .publicURL: return publicURL.map(Self.quote)
        }
    }

    /// A secret URL with its password replaced by `****` (`postgres://relay:****@db/relay`); a secret that is not a
    /// URL with credentials becomes `****` entirely.
    public static func maskSecret(_ secret: String) -> String {
        guard let schemeEnd = secret.firstRange(of: "://") else { return "****" }
        let afterScheme = secret[schemeEnd.upperBound...]
        guard let at = afterScheme.lastIndex(of: "@") else {
            return String(secret[..<schemeEnd.upperBound]) + Self.maskQuery(String(afterScheme))
        }
        let credentials = afterScheme[..<at]
        // What comes before the first colon, possibly nothing (`postgres://:password@host` has no user).
        let user = credentials.firstIndex(of: ":").map { String(credentials[..<$0]) } ?? String(credentials)
        let rest = Self.maskQuery(String(afterScheme[afterScheme.index(after: at)...]))
        return String(secret[..<schemeEnd.upperBound]) + user + ":****@" + rest
    }

    /// `password=` and `sslpassword=` query parameters masked.
    private static func maskQuery(_ text: String) -> String {
        guard let question = text.firstIndex(of: "?") else { return text }
        let parameters = text[text.index(after: question)...].split(separator: "&").map { parameter -> String in
            let name = parameter.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            return name.lowercased().hasSuffix("password") ? name + "=****" : String(parameter)
        }
        return String(text[...question]) + parameters.joined(separator: "&")
    }

    /// `24h`, `25s`, `1h30m`, `500ms`: the exact duration in the fewest units.
    public static func renderDuration(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        var milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        var parts: [String] = []
        for (unit, size) in [("h", Int64(3_600_000)), ("m", 60_000), ("s", 1000), ("ms", 1)] {
            if milliseconds >= size {
                parts.append("\(milliseconds / size)\(unit)")
                milliseconds %= size
            }
        }
        return parts.isEmpty ? "0s" : parts.joined()
    }

    /// `512KiB`, `1MiB`, or bytes when not a whole number of KiB.
    public static func renderSize(_ bytes: Int) -> String {
        for (unit, size) in [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] where bytes % size == 0 {
            return "\(bytes / size)\(unit)"
        }
        return String(bytes)
    }

    private static func renderList(_ items: [String]) -> String {
        "[" + items.map(quote).joined(separator: ", ") + "]"
    }

    private static func quote(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\t": escaped += "\\t"
            default: escaped.append(character)
            }
        }
        return "\"" + escaped + "\""
    }
}
