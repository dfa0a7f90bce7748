/// Turns raw values into typed ones; every failure is a message that names what was expected.
enum ConfigurationValueParser {
    struct Failure: Error, Equatable {
        var message: String
        init(_ message: String) { self.message = message }
    }

    /// A text value: a string as is, an integer or boolean as written.
    static func text(_ raw: ConfigurationRawValue) throws(Failure) -> String {
        switch raw {
        case .string(let text): return text
        case .integer(let number): return String(number)
        case .boolean(let flag): return String(flag)
        case .array: throw Failure("expected a single value, not a list")
        }
    }

    /// A list: an array, or a text with comma-separated items (environment, flags).
    static func list(_ raw: ConfigurationRawValue) throws(Failure) -> [String] {
        switch raw {
        case .array(let elements):
            var items: [String] = []
            for element in elements { items.append(try text(element)) }
            return items
        default:
            let joined = try text(raw)
            if joined.trimmed.isEmpty { return [] }
            return joined.split(separator: ",").map { String($0).trimmed }
        }
    }

    /// `host:port` or `[ipv6]:port`, port 0...65535.
    static func listenAddress(_ text: String) throws(Failure) -> PushRelayConfiguration.ListenAddress {
        let host: String
        let portText: String
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw Failure("invalid address '\(text)': missing ']' after the IPv6 address")
            }
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else {
                throw Failure("invalid address '\(text)': expected ':port' after ']'")
            }
            portText = String(rest.dropFirst())
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw Failure("invalid address '\(text)': expected host:port, e.g. 0.0.0.0:8080 or [::]:8080")
            }
            host = String(text[..<colon])
            if host.contains(":") {
                throw Failure("invalid address '\(text)': write an IPv6 address in brackets, e.g. [::1]:8080")
            }
            portText = String(text[text.index(after: colon)...])
        }
        guard !host.isEmpty, !host.contains(where: { $0.isWhitespace || $0 == "/" }) else {
            throw Failure("invalid address '\(text)': missing or invalid host")
        }
        guard !portText.isEmpty, portText.allSatisfy(\.isASCIIDigit), let port = Int(portText), port <= 65535 else {
            throw Failure("invalid port '\(portText)' in '\(text)': must be a number from 0 to 65535")
        }
        return .init(host: host, port: port)
    }

    /// `25s`, `500ms`, `2m`, `24h`, `1d`, `1h30m`, or bare seconds (`25`). Must be greater than zero.
    /// A web origin as browsers send it in `Origin`: `http(s)://host[:port]`, no path, lower-case scheme and host;
    /// or `*` for any origin.
    static func origin(_ text: String) throws(Failure) -> String {
        let origin = text.trimmed
        if origin == "*" { return origin }
        let parts = origin.split(separator: "://", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] == "http" || parts[0] == "https", !parts[1].isEmpty,
              !parts[1].contains("/"), !parts[1].contains("?"), !parts[1].contains("#"), !parts[1].contains("@"),
              origin == origin.lowercased()
        else {
            throw Failure(
                "'\(origin)' is not an origin: scheme://host[:port] in lower case (https://shop.example.com), or *")
        }
        return origin
    }

    static func duration(_ raw: ConfigurationRawValue) throws(Failure) -> Duration {
        let text = try text(raw).trimmed
        if text.hasPrefix("-") {
            throw Failure("duration '\(text)' is negative: must be greater than zero")
        }
        if !text.isEmpty, text.allSatisfy(\.isASCIIDigit) {
            guard let seconds = Int64(text) else {
                throw Failure("duration '\(text)' is too large: at most 36500d (100 years)")
            }
            return try positive(.seconds(seconds), text)
        }
        var total = Duration.zero
        var rest = Substring(text)
        guard !rest.isEmpty else {
            throw Failure("empty duration: write e.g. 25s, 500ms, 2m, 24h")
        }
        while !rest.isEmpty {
            let digits = rest.prefix(while: \.isASCIIDigit)
            let afterDigits = rest.dropFirst(digits.count)
            let unit = afterDigits.prefix(while: { $0.isLetter })
            guard !digits.isEmpty, !unit.isEmpty, let amount = Int64(digits), amount < 1 << 40 else {
                throw Failure("invalid duration '\(text)': write e.g. 25s, 500ms, 2m, 24h, 1h30m")
            }
            switch unit {
            case "ms": total += .milliseconds(amount)
            case "s": total += .seconds(amount)
            case "m": total += .seconds(amount * 60)
            case "h": total += .seconds(amount * 3600)
            case "d": total += .seconds(amount * 86400)
            default:
                throw Failure("invalid duration unit '\(unit)' in '\(text)': use ms, s, m, h or d")
            }
            rest = afterDigits.dropFirst(unit.count)
            // Each part is below 2^40 days; stopping once past the bound keeps the sum from overflowing.
            if total > longestDuration { break }
        }
        return try positive(total, text)
    }

    /// A duration as ``duration(_:)``, or `nil` for `0` (also `0s`, or the integer 0): "never".
    static func durationOrZero(_ raw: ConfigurationRawValue) throws(Failure) -> Duration? {
        if case .integer(0) = raw { return nil }
        if let text = try? text(raw).trimmed, text == "0" || text == "0s" { return nil }
        return try duration(raw)
    }

    /// The longest duration accepted: 100 years, which means "never" to every field. Much longer ones (up to 2^40
    /// days per part were parsed) overflowed, a crash: the milliseconds `check-config` prints, or the sum itself.
    static let longestDuration = Duration.seconds(36_500 * 86_400)

    private static func positive(_ duration: Duration, _ text: String) throws(Failure) -> Duration {
        guard duration > .zero else { throw Failure("duration '\(text)' must be greater than zero") }
        guard duration <= longestDuration else {
            throw Failure("duration '\(text)' is too large: at most 36500d (100 years)")
        }
        return duration
    }

    /// Bytes: `4096`, `64KiB`, `1MiB`, `1GiB` (also `KB`/`MB`/`GB` = powers of 1000). Must be greater than zero.
    static func size(_ raw: ConfigurationRawValue) throws(Failure) -> Int {
        let text = try text(raw).trimmed.filter { $0 != "_" && $0 != " " }
        if text.hasPrefix("-") { throw Failure("size '\(text)' is negative: must be greater than zero") }
        let digits = text.prefix(while: \.isASCIIDigit)
        let unit = text.dropFirst(digits.count)
        let multipliers: [Substring: Int] = [
            "": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 1000, "MB": 1_000_000,
            "GB": 1_000_000_000,
        ]
        guard let amount = Int(digits), let multiplier = multipliers[unit] else {
            throw Failure("invalid size '\(text)': write bytes, or e.g. 64KiB, 1MiB")
        }
        let (bytes, overflow) = amount.multipliedReportingOverflow(by: multiplier)
        guard !overflow, bytes <= Int(Int32.max) else {
            throw Failure("size '\(text)' is too large: less than 2GiB (at most 2147483647 bytes)")
        }
        guard bytes > 0 else { throw Failure("size '\(text)' must be greater than zero") }
        return bytes
    }

    /// A whole number in `range`.
    static func integer(_ raw: ConfigurationRawValue, in range: ClosedRange<Int>) throws(Failure) -> Int {
        let number: Int
        switch raw {
        case .integer(let value):
            number = value
        default:
            let text = try text(raw).trimmed
            guard let value = Int(text.filter { $0 != "_" }) else {
                throw Failure("'\(text)' is not a whole number")
            }
            number = value
        }
        guard range.contains(number) else {
            throw Failure("\(number) is out of range: must be from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    /// `true`/`false` (also `yes`/`no`, `on`/`off`, `1`/`0` from the environment or a flag).
    static func boolean(_ raw: ConfigurationRawValue) throws(Failure) -> Bool {
        if case .boolean(let value) = raw { return value }
        let text = try text(raw).trimmed
        switch text.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: throw Failure("'\(text)' is not a boolean: write true or false")
        }
    }

    /// One of an enumeration's raw values.
    static func choice<T: RawRepresentable & CaseIterable>(
        _ raw: ConfigurationRawValue,
        as type: T.Type
    ) throws(Failure) -> T where T.RawValue == String {
        let text = try text(raw).trimmed
        guard let value = T(rawValue: text.lowercased()) else {
            let choices = T.allCases.map(\.rawValue).joined(separator: ", ")
            throw Failure("'\(text)' is not one of: \(choices)")
        }
        return value
    }
}

extension String {
    var trimmed: String {
        var result = Substring(self)
        while let first = result.first, first.isWhitespace { result = result.dropFirst() }
        while let last = result.last, last.isWhitespace { result = result.dropLast() }
        return String(result)
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
