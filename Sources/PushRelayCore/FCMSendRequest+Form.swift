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
            guard let key = FormDecoding.decode(pair[pair.startIndex..<equals]),
                let value = FormDecoding.decode(equals < pair.endIndex ? pair[(equals + 1)...] : ArraySlice<UInt8>())
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

/// `application/x-www-form-urlencoded` decoding.
enum FormDecoding {
    /// Decodes `%XX` and `+`; `nil` for a bad escape or bytes that are not UTF-8.
    static func decode(_ bytes: ArraySlice<UInt8>) -> String? {
        if !bytes.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) {
            return String(validating: bytes, as: UTF8.self)
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") {
                output.append(0x20)
                index += 1
            } else if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex,
                    let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
                else { return nil }
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(byte)
                index += 1
            }
        }
        return String(validating: output, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
