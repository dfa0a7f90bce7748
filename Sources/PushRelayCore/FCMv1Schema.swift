import PushRelayWire

/// The shape of an FCM HTTP v1 send request (`projects.messages.send`), checked the way Google's JSON decoding
/// checks it: every object field must be known (camelCase or snake_case, as proto3 JSON accepts both), every value
/// of the right type; free-form objects (`apns.payload`, `webpush.notification`) are taken as they are.
indirect enum FCMv1Schema: Sendable {
    case string
    case bool
    case integer
    /// A `google.protobuf.Duration` string: `"3.5s"`.
    case duration
    /// A proto enum by name.
    case enumeration([String])
    /// `map<string, string>`.
    case stringMap
    /// `repeated string`.
    case stringArray
    /// Any JSON object (`google.protobuf.Struct`).
    case anyObject
    /// Any JSON value.
    case anyValue
    /// A message with these fields (snake_case names).
    case message([String: FCMv1Schema])

    static let notification: FCMv1Schema = .message(["title": .string, "body": .string, "image": .string])

    static let androidNotification: FCMv1Schema = .message([
        "title": .string, "body": .string, "icon": .string, "color": .string, "sound": .string, "tag": .string,
        "click_action": .string, "body_loc_key": .string, "body_loc_args": .stringArray, "title_loc_key": .string,
        "title_loc_args": .stringArray, "channel_id": .string, "ticker": .string, "sticky": .bool,
        "event_time": .string, "local_only": .bool,
        "notification_priority": .enumeration([
            "PRIORITY_UNSPECIFIED", "PRIORITY_MIN", "PRIORITY_LOW", "PRIORITY_DEFAULT", "PRIORITY_HIGH", "PRIORITY_MAX",
        ]),
        "default_sound": .bool, "default_vibrate_timings": .bool, "default_light_settings": .bool,
        "vibrate_timings": .stringArray, "visibility": .enumeration(["VISIBILITY_UNSPECIFIED", "PRIVATE", "PUBLIC", "SECRET"]),
        "notification_count": .integer, "light_settings": .anyObject, "image": .string,
        "bypass_proxy_notification": .bool, "proxy": .enumeration(["PROXY_UNSPECIFIED", "ALLOW", "DENY", "IF_PRIORITY_LOWERED"]),
    ])

    static let android: FCMv1Schema = .message([
        "collapse_key": .string, "priority": .enumeration(["NORMAL", "HIGH"]), "ttl": .duration,
        "restricted_package_name": .string, "data": .stringMap, "notification": androidNotification,
        "fcm_options": .message(["analytics_label": .string]), "direct_boot_ok": .bool,
        "bandwidth_constrained_ok": .bool, "restricted_satellite_ok": .bool,
    ])

    static let apns: FCMv1Schema = .message([
        "headers": .stringMap, "payload": .anyObject,
        "fcm_options": .message(["analytics_label": .string, "image": .string]), "live_activity_token": .string,
    ])

    static let webpush: FCMv1Schema = .message([
        "headers": .stringMap, "data": .stringMap, "notification": .anyObject,
        "fcm_options": .message(["link": .string, "analytics_label": .string]),
    ])

    static let message: FCMv1Schema = .message([
        "name": .string, "data": .stringMap, "notification": notification, "android": android, "webpush": webpush,
        "apns": apns, "fcm_options": .message(["analytics_label": .string]), "token": .string, "topic": .string,
        "condition": .string,
    ])

    static let request: FCMv1Schema = .message(["validate_only": .bool, "message": message])

    /// The proto type name in Google's "Invalid value" text.
    var typeName: String {
        switch self {
        case .string, .stringMap, .stringArray: "TYPE_STRING"
        case .bool: "TYPE_BOOL"
        case .integer: "TYPE_INT32"
        case .duration: "type.googleapis.com/google.protobuf.Duration"
        case .enumeration: "TYPE_ENUM"
        case .anyObject: "type.googleapis.com/google.protobuf.Struct"
        case .anyValue: "type.googleapis.com/google.protobuf.Value"
        case .message: "TYPE_MESSAGE"
        }
    }

    /// Checks `value` at `path` and returns it with message field names in snake_case; `null` fields are dropped.
    /// The path is made only for an error's text: building each field's on the way cost a valid send thousands of
    /// instructions.
    func check(_ value: JSONValue, at path: () -> String) throws(FCMv1Error) -> JSONValue {
        switch self {
        case .string:
            guard case .string = value else { throw Self.invalidValue(path(), self, value) }
            return value
        case .bool:
            guard case .bool = value else { throw Self.invalidValue(path(), self, value) }
            return value
        case .integer:
            guard value.int64Value != nil else { throw Self.invalidValue(path(), self, value) }
            return value
        case .duration:
            guard case .string(let text) = value, Self.durationSeconds(text) != nil else {
                let path = path()
                throw FCMv1Error.invalidPayload(
                    "Invalid value at '\(path)' (type.googleapis.com/google.protobuf.Duration), Field '\(path.lastField)', "
                        + "Illegal duration format; duration must end with 's'",
                    field: path)
            }
            return value
        case .enumeration(let names):
            guard case .string(let name) = value, names.contains(name) else { throw Self.invalidValue(path(), self, value) }
            return value
        case .stringMap:
            guard case .object(let object) = value else { throw Self.invalidValue(path(), self, value) }
            for (index, member) in object.entries.enumerated() {
                guard case .string = member.value else {
                    throw Self.invalidValue("\(path())[\(index)].value", self, member.value)
                }
            }
            return value
        case .stringArray:
            guard case .array(let elements) = value else { throw Self.invalidValue(path(), self, value) }
            for (index, element) in elements.enumerated() {
                guard case .string = element else { throw Self.invalidValue("\(path())[\(index)]", self, element) }
            }
            return value
        case .anyObject:
            guard case .object = value else { throw Self.invalidValue(path(), self, value) }
            return value
        case .anyValue:
            return value
        case .message(let fields):
            guard case .object(let object) = value else {
                let path = path()
                throw FCMv1Error.invalidPayload(
                    "Invalid JSON payload received. Expected an object at '\(path)', got \(value.serializedString().prefix(64)).",
                    field: path)
            }
            var checked = JSONObject()
            checked.reserveCapacity(object.count)
            for member in object.entries {
                let name = Self.snakeCase(member.key)
                guard let schema = fields[name] else {
                    let path = path()
                    let at = path.isEmpty ? "" : " at '\(path)'"
                    throw FCMv1Error.invalidPayload(
                        "Invalid JSON payload received. Unknown name \"\(member.key)\"\(at): Cannot find field.",
                        field: path)
                }
                if case .null = member.value { continue }
                func fieldPath() -> String {
                    let path = path()
                    return path.isEmpty ? name : "\(path).\(name)"
                }
                // One field given twice, as `collapse_key` and `collapseKey`: refused as proto3 JSON refuses it.
                guard checked[name] == nil else {
                    let fieldPath = fieldPath()
                    throw FCMv1Error.invalidPayload(
                        "Invalid JSON payload received. Duplicate field \"\(member.key)\" at '\(fieldPath)'.", field: fieldPath)
                }
                checked[name] = try schema.check(member.value, at: fieldPath)
            }
            return .object(checked)
        }
    }

    private static func invalidValue(_ path: String, _ schema: FCMv1Schema, _ value: JSONValue) -> FCMv1Error {
        FCMv1Error.invalidPayload(
            "Invalid value at '\(path)' (\(schema.typeName)), \(value.serializedString().prefix(64))", field: path)
    }

    /// `fcmOptions` → `fcm_options`; snake_case stays as it is.
    static func snakeCase(_ name: String) -> String {
        guard name.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else { return name }
        var result = ""
        for character in name {
            if character.isUppercase {
                result.append("_")
                result.append(contentsOf: character.lowercased())
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// The seconds of a proto duration (`"3.5s"`, `"2419200s"`, `"0s"`, `"-5s"`), rounded away from zero; nil if malformed.
    static func durationSeconds(_ text: String) -> Int64? {
        guard text.hasSuffix("s") else { return nil }
        // proto3 durations may be negative ("-5s"): read, so that the caller's range check names the problem.
        let isNegative = text.hasPrefix("-")
        let number = text.dropFirst(isNegative ? 1 : 0).dropLast()
        let parts = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.allSatisfy(\.isASCIIDigitCharacter),
            whole.count <= 12, let seconds = Int64(whole)
        else { return nil }
        if parts.count == 2 {
            let fraction = parts[1]
            guard !fraction.isEmpty, fraction.count <= 9, fraction.allSatisfy(\.isASCIIDigitCharacter) else { return nil }
            let rounded = fraction.contains(where: { $0 != "0" }) ? seconds + 1 : seconds
            return isNegative ? -rounded : rounded
        }
        return isNegative ? -seconds : seconds
    }
}

extension Character {
    fileprivate var isASCIIDigitCharacter: Bool { isASCII && isNumber }
}

extension String {
    /// The last component of a dotted field path.
    fileprivate var lastField: String {
        String(split(separator: ".").last ?? Substring(self))
    }
}
