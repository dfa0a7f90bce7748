import PushRelayWire

extension FCMSendRequest {
    /// Parses the plain-text variant: an `application/x-www-form-urlencoded` body (UTF-8, `+` for space).
    ///
    /// Fields: `registration_id` (one token; `to` is accepted as a synonym and may name `/topics/x`),
    /// `condition`, `collapse_key`, `time_to_live`, `dry_run`, `delay_while_idle`, `priority`,
    /// `content_available`, `mutable_content`, `restricted_package_name`, `data.<key>=<value>` for each data
    /// entry and `notification.<key>=<value>` (an extension) for notification keys; values are strings.
    /// Booleans are `1`/`0` or `true`/`false` in any case (python-gcm writes Python's `True`/`False`); a
    /// `time_to_live` that is not an integer is `InvalidTtl`.
    /// More than one `registration_id` is a `400` (multicast needs JSON). Unknown fields are ignored.
    public static func parse(form bytes: [UInt8]) throws(FCMError) -> FCMSendRequest {
        var fields = FCMSendFields()
        var data = JSONObject()
        var notification = JSONObject()
        var tokenCount = 0
        for pair in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
            guard let key = PercentDecoding.decode(pair[pair.startIndex..<equals], plus: .space),
                let value = PercentDecoding.decode(
                    equals < pair.endIndex ? pair[(equals + 1)...] : ArraySlice<UInt8>(), plus: .space)
            else { throw FCMError.malformedForm }
            switch key {
            case "registration_id", "to":
                tokenCount += 1
                fields.to = value
            case "condition": fields.condition = value
            case "collapse_key": fields.collapseKey = value
            case "priority": fields.priority = try FCMSendFields.priority(value)
            case "content_available": fields.contentAvailable = try formBool(value, field: key)
            case "mutable_content": fields.mutableContent = try formBool(value, field: key)
            case "dry_run": fields.dryRun = try formBool(value, field: key)
            case "delay_while_idle": fields.delayWhileIdle = try formBool(value, field: key)
            case "restricted_package_name": fields.restrictedPackageName = value
            case "time_to_live": fields.timeToLive = Int64(value) ?? -1
            default:
                if key.hasPrefix("data.") {
                    data[String(key.dropFirst(5))] = .string(value)
                } else if key.hasPrefix("notification.") {
                    notification[String(key.dropFirst(13))] = .string(value)
                }
            }
        }
        if tokenCount > 1 { throw FCMError.plainTextMulticast }
        if !data.isEmpty { fields.data = data }
        if !notification.isEmpty { fields.notification = notification }
        return try fields.makeRequest(encoding: .form)
    }

    private static func formBool(_ value: String, field: String) throws(FCMError) -> Bool {
        switch value.lowercased() {
        case "1", "true": return true
        case "0", "false", "": return false
        default: throw FCMError.fieldType(field, mustBe: "boolean", value: .string(value))
        }
    }
}
