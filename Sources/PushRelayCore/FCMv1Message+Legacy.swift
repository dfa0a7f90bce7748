import PushRelayWire

extension FCMv1Message {
    /// The `aps` keys that legacy fields carry; the rest of `aps` travels in ``APNsPayloadExtras/aps``.
    private static let mappedAPSKeys: Set<String> = ["alert", "badge", "sound", "category", "content-available", "mutable-content"]
    /// `aps.alert` keys and the legacy `notification` keys they map to.
    private static let alertKeys: [(aps: String, legacy: String)] = [
        ("title", "title"), ("subtitle", "subtitle"), ("body", "body"), ("loc-key", "body_loc_key"),
        ("loc-args", "body_loc_args"), ("title-loc-key", "title_loc_key"), ("title-loc-args", "title_loc_args"),
    ]

    /// Maps the message onto the legacy request the shared send path and ``Envelope`` understand
    /// (docs/protocol.md, "FCM HTTP v1 → the envelope"):
    ///
    /// - `notification` ← `message.notification` {title, body, image}, overridden by `apns.payload.aps.alert`
    ///   (title, subtitle, body, loc-key, …; an alert string is the body), `aps.badge`, `aps.sound`,
    ///   `aps.category` (→ `click_action`); `android.notification` and then `webpush.notification` fill in the keys
    ///   still missing (`channel_id` → `android_channel_id`);
    /// - `content_available`/`mutable_content` ← `aps.content-available`/`aps.mutable-content` = 1;
    /// - `data` ← `message.data`, then the keys of `android.data` and `webpush.data` that it lacks;
    /// - time to live ← `apns-expiration` (epoch seconds, `0` = now or never), else `android.ttl`, else the
    ///   `webpush` `TTL` header, else 4 weeks; priority ← `apns-priority` (`10` high, else normal), else
    ///   `android.priority`, else `Urgency`; collapse key ← `apns-collapse-id`, else `android.collapse_key`, else
    ///   the `webpush` `Topic` header; `restricted_package_name` ← `android.restricted_package_name`;
    /// - other `aps` and `alert` keys, and the custom keys of `apns.payload`, go to ``FCMSendRequest/apnsExtras``.
    ///
    /// Throws `INVALID_ARGUMENT` for a reserved data key, a time to live beyond 4 weeks, a bad APNs header or a
    /// payload over 4096 bytes (data, notification and the APNs extras, keys and values).
    public func legacyRequest(nowSeconds: Int64) throws(FCMv1Error) -> FCMSendRequest {
        var request = FCMSendRequest(addressing: .tokens([]))
        request.dryRun = validateOnly
        // Header names are case-insensitive (RFC 9110 §5.1): looked up in lower case (`TTL`, `ttl` and `Ttl` alike).
        let apnsHeaders = Self.lowercasedNames(apns?["headers"]?.objectValue)
        let payload = apns?["payload"]?.objectValue ?? JSONObject()
        let aps = payload["aps"]?.objectValue ?? JSONObject()
        if let raw = payload["aps"], raw.objectValue == nil {
            throw FCMv1Error.invalidArgument("apns.payload.aps must be an object", field: "message.apns.payload.aps")
        }
        let androidNotification = android?["notification"]?.objectValue
        let webpushHeaders = Self.lowercasedNames(webpush?["headers"]?.objectValue)

        // Notification, by precedence: APNs alert > message.notification > android > webpush.
        var notification = self.notification ?? JSONObject()
        var extras = APNsPayloadExtras()
        switch aps["alert"] {
        case .string(let body)?: notification["body"] = .string(body)
        case .object(let alert)?:
            for member in alert.entries {
                if let mapping = Self.alertKeys.first(where: { $0.aps == member.key }) {
                    notification[mapping.legacy] = member.value
                } else {
                    extras.alert[member.key] = member.value
                }
            }
        case nil, .null?: break
        case let other?:
            throw FCMv1Error.invalidArgument(
                "apns.payload.aps.alert must be a string or an object, not \(other)", field: "message.apns.payload.aps.alert")
        }
        if let badge = aps["badge"] { notification["badge"] = badge }
        if case .string(let sound)? = aps["sound"] {
            notification["sound"] = .string(sound)
        } else if let sound = aps["sound"] {
            extras.aps["sound"] = sound  // a critical-alert dictionary
        }
        if let category = aps["category"] { notification["click_action"] = category }
        for member in aps.entries where !Self.mappedAPSKeys.contains(member.key) { extras.aps[member.key] = member.value }
        for member in payload.entries where member.key != "aps" {
            guard !FCMDataKey.isReserved(member.key), member.key != "collapse_key" else {
                throw FCMv1Error.invalidArgument(
                    "Invalid APNs payload key: \(member.key) is reserved", field: "message.apns.payload")
            }
            extras.custom[member.key] = member.value
        }
        for member in androidNotification?.entries ?? [] {
            let key = member.key == "channel_id" ? "android_channel_id" : member.key
            if notification[key] == nil { notification[key] = member.value }
        }
        for member in webpush?["notification"]?.objectValue?.entries ?? [] where notification[member.key] == nil {
            notification[member.key] = member.value
        }
        request.notification = notification.isEmpty ? nil : notification
        request.contentAvailable = Self.isSet(aps["content-available"])
        request.mutableContent = Self.isSet(aps["mutable-content"])
        request.apnsExtras = extras.isEmpty ? nil : extras

        // Data: message.data, then what android.data and webpush.data add.
        var data = self.data ?? JSONObject()
        for (source, field) in [(android?["data"], "message.android.data"), (webpush?["data"], "message.webpush.data")] {
            for member in source?.objectValue?.entries ?? [] where data[member.key] == nil {
                guard !FCMDataKey.isReserved(member.key) else {
                    throw FCMv1Error.invalidArgument("Invalid data payload key: \(member.key) is reserved", field: field)
                }
                data[member.key] = member.value
            }
        }
        if let reserved = data.entries.first(where: { FCMDataKey.isReserved($0.key) }) {
            throw FCMv1Error.invalidArgument(
                "Invalid data payload key: \(reserved.key) is reserved ('from', 'message_type', 'google…', 'gcm…')",
                field: "message.data")
        }
        request.data = data.isEmpty ? nil : data

        request.timeToLive = try Self.timeToLive(
            apnsHeaders: apnsHeaders, android: android, webpushHeaders: webpushHeaders, nowSeconds: nowSeconds)
        request.priority = try Self.priority(apnsHeaders: apnsHeaders, android: android, webpushHeaders: webpushHeaders)
        // proto3 reads an empty string as the field's default, i.e. not set: `""` neither collapses nor restricts.
        func nonEmpty(_ value: JSONValue?) -> String? {
            guard let string = value?.stringValue, !string.isEmpty else { return nil }
            return string
        }
        request.collapseKey = nonEmpty(apnsHeaders["apns-collapse-id"]) ?? nonEmpty(android?["collapse_key"])
            ?? nonEmpty(webpushHeaders["topic"])
        request.restrictedPackageName = nonEmpty(android?["restricted_package_name"])

        request.payloadSize = FCMPayloadSize.of(data: request.data, notification: request.notification)
            + FCMPayloadSize.of(data: extras.aps, notification: extras.custom)
            + FCMPayloadSize.of(data: extras.alert, notification: nil)
        guard request.payloadSize <= FCMLimits.maxPayloadBytes else {
            throw FCMv1Error.invalidArgument(
                "Message is too big: the payload is \(request.payloadSize) bytes, the limit is \(FCMLimits.maxPayloadBytes)",
                field: "message")
        }

        switch target {
        case .token(let token):
            if let key = NotificationKey(token) {
                request.addressing = .deviceGroup(key)
            } else {
                request.addressing = .tokens([FCMRecipient(token: token)])
            }
        case .topic(let topic): request.addressing = .topic(topic)
        case .condition(let condition): request.addressing = .condition(condition)
        }
        return request
    }

    /// A headers object with its names in lower case; of names that differ only in case, the first is kept.
    private static func lowercasedNames(_ headers: JSONObject?) -> JSONObject {
        var result = JSONObject()
        for member in headers?.entries ?? [] {
            let name = member.key.lowercased()
            if result[name] == nil { result[name] = member.value }
        }
        return result
    }

    /// An `aps` flag (`content-available`, `mutable-content`): `1` as Apple writes it, or `true`.
    private static func isSet(_ value: JSONValue?) -> Bool {
        if case .bool(true)? = value { return true }
        return value?.int64Value == 1
    }

    private static func timeToLive(
        apnsHeaders: JSONObject, android: JSONObject?, webpushHeaders: JSONObject, nowSeconds: Int64
    ) throws(FCMv1Error) -> Int64 {
        var seconds: Int64 = FCMLimits.defaultTimeToLive
        var field = "message.android.ttl"
        if let expiration = apnsHeaders["apns-expiration"]?.stringValue {
            guard let epoch = Int64(expiration), epoch >= 0 else {
                throw FCMv1Error.invalidArgument(
                    "apns-expiration must be a UNIX epoch date in seconds", field: "message.apns.headers")
            }
            seconds = epoch == 0 ? 0 : max(epoch - nowSeconds, 0)
            field = "message.apns.headers"
        } else if let ttl = android?["ttl"]?.stringValue {
            seconds = FCMv1Schema.durationSeconds(ttl) ?? -1
        } else if let ttl = webpushHeaders["ttl"]?.stringValue {
            guard let value = Int64(ttl), value >= 0 else {
                throw FCMv1Error.invalidArgument("The webpush TTL header must be seconds", field: "message.webpush.headers")
            }
            seconds = value
            field = "message.webpush.headers"
        }
        guard seconds >= 0, seconds <= FCMLimits.maxTimeToLive else {
            throw FCMv1Error.invalidArgument(
                "The time to live is outside 0 to \(FCMLimits.maxTimeToLive) seconds (4 weeks)", field: field)
        }
        return seconds
    }

    private static func priority(
        apnsHeaders: JSONObject, android: JSONObject?, webpushHeaders: JSONObject
    ) throws(FCMv1Error) -> FCMSendRequest.Priority? {
        if let priority = apnsHeaders["apns-priority"]?.stringValue {
            switch priority {
            case "10": return .high
            case "5", "1": return .normal
            default:
                throw FCMv1Error.invalidArgument("apns-priority must be 10, 5 or 1", field: "message.apns.headers")
            }
        }
        switch android?["priority"]?.stringValue {
        case "HIGH": return .high
        case "NORMAL": return .normal
        default: break
        }
        if let urgency = webpushHeaders["urgency"]?.stringValue { return urgency == "high" ? .high : .normal }
        return nil
    }
}
