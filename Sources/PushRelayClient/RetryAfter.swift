import Foundation

/// The `Retry-After` header field (RFC 9110 §10.2.3): how long a server that answered `429` or `503` asks its
/// client to wait, as seconds (`Retry-After: 120`) or as an HTTP-date (`Retry-After: Fri, 31 Dec 1999 23:59:59 GMT`).
///
/// The value is read as sent; what the client does with it (at least its own backoff, at most
/// ``BackoffPolicy/maximumRetryAfter``) is the ``ReconnectStateMachine``'s business.
enum RetryAfter {
    /// The statuses whose `Retry-After` the client honours: `429 Too Many Requests` and `503 Service Unavailable`.
    static func applies(to status: Int) -> Bool {
        status == 429 || status == 503
    }

    /// The delay `value` asks for, counted from `now` for an HTTP-date (a date in the past is `.zero`); `nil` when
    /// the value is neither form. Seconds beyond what a `Duration` of `Int32.max` seconds holds are cut to it.
    static func delay(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return nil }
        if text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // Delta-seconds: digits only. An overlong number is a very long wait, not an error.
            let seconds = text.count > 10 ? Int64(Int32.max) : min(Int64(text) ?? Int64(Int32.max), Int64(Int32.max))
            return .seconds(seconds)
        }
        guard let date = httpDate(text) else { return nil }
        let interval = date.timeIntervalSince(now)
        guard interval > 0 else { return .zero }
        return .milliseconds(Int64((min(interval, Double(Int32.max)) * 1000).rounded(.up)))
    }

    /// An HTTP-date in any of its three forms (a recipient must accept all of them): IMF-fixdate
    /// `Sun, 06 Nov 1994 08:49:37 GMT`, the obsolete RFC 850 form `Sunday, 06-Nov-94 08:49:37 GMT` and asctime's
    /// `Sun Nov  6 08:49:37 1994`.
    static func httpDate(_ text: String) -> Date? {
        // asctime pads a one-digit day with a space: collapse runs of spaces.
        let collapsed = text.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: collapsed) { return date }
        }
        return nil
    }
}
