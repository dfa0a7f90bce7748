public import PushRelayWire

extension FCMSendRequest {
    /// Parses and validates a JSON body (`Content-Type: application/json`).
    ///
    /// Throws `400` errors: `JSON_PARSING_ERROR: …`, `Field "to" must be a JSON string: 5`,
    /// `"registration_ids" field is not a JSON array`, `"registration_ids" field cannot be empty`,
    /// `Number of messages on bulk (1001) exceeds maximum allowed (1000)`, and `InvalidParameters` for a malformed
    /// topic, condition or priority. Unknown fields are ignored, as FCM does; a `null` field counts as absent.
    public static func parse(json bytes: [UInt8], limits: JSONParseLimits = .default) throws(FCMError) -> FCMSendRequest {
        if let request = try FCMSendScan.request(json: bytes, limits: limits) { return request }
        return try parseFully(json: bytes, limits: limits)
    }

    /// ``parse(json:limits:)`` through the full parser, for every body (``FCMSendScan`` reads the common ones).
    static func parseFully(json bytes: [UInt8], limits: JSONParseLimits = .default) throws(FCMError) -> FCMSendRequest {
        let root: JSONValue
        do {
            root = try JSONValue.parse(bytes, limits: limits)
        } catch {
            throw FCMError.invalidJSON(error)
        }
        guard case .object(let object) = root else { throw FCMError.bodyNotObject }
        return try parse(jsonObject: object)
    }

    /// Validates an already parsed JSON object (see ``parse(json:limits:)``).
    public static func parse(jsonObject object: JSONObject) throws(FCMError) -> FCMSendRequest {
        var fields = FCMSendFields()
        var registrationIDs: [JSONValue]? = nil
        for member in object.entries {
            let key = member.key
            let value = member.value
            if case .null = value { continue }
            // The key's length picks the one or few names it can be (a `switch` over strings compares them in turn).
            guard let field = Field(key) else { continue }
            switch field {
            case .to: fields.to = try string(value, field: key)
            case .registrationIDs:
                guard case .array(let elements) = value else { throw FCMError.registrationIDsNotArray }
                registrationIDs = elements
            case .condition: fields.condition = try string(value, field: key)
            case .notificationKey: fields.notificationKey = try string(value, field: key)
            case .collapseKey: fields.collapseKey = try string(value, field: key)
            case .priority: fields.priority = try FCMSendFields.priority(try string(value, field: key))
            case .contentAvailable: fields.contentAvailable = try bool(value, field: key)
            case .mutableContent: fields.mutableContent = try bool(value, field: key)
            case .dryRun: fields.dryRun = try bool(value, field: key)
            case .delayWhileIdle: fields.delayWhileIdle = try bool(value, field: key)
            case .restrictedPackageName: fields.restrictedPackageName = try string(value, field: key)
            case .timeToLive:
                guard case .number(let number) = value else {
                    throw FCMError.fieldType(key, mustBe: "number", value: value)
                }
                fields.timeToLive = number.int64Value ?? -1
            case .data:
                guard case .object(let data) = value else { throw FCMError.fieldType(key, mustBe: "array", value: value) }
                fields.data = data
            case .notification:
                guard case .object(let notification) = value else {
                    throw FCMError.fieldType(key, mustBe: "array", value: value)
                }
                fields.notification = notification
            }
        }
        if let registrationIDs {
            if registrationIDs.isEmpty { throw FCMError.registrationIDsEmpty }
            if registrationIDs.count > FCMLimits.maxRegistrationIDs {
                throw FCMError.tooManyRegistrationIDs(registrationIDs.count)
            }
            fields.registrationIDs = registrationIDs.map { $0.stringValue ?? $0.serializedString() }
            fields.nonStringRegistrationIDs = registrationIDs.indices.filter { registrationIDs[$0].stringValue == nil }
        }
        return try fields.makeRequest(encoding: .json)
    }

    /// The fields of a legacy send, found by the key's length first.
    enum Field: UInt8 {
        case to, registrationIDs, condition, notificationKey, collapseKey, priority, contentAvailable, mutableContent
        case dryRun, delayWhileIdle, restrictedPackageName, timeToLive, data, notification

        init?(_ key: String) {
            var key = key
            guard let field = key.withUTF8({ Field(bytes: $0) }) else { return nil }
            self = field
        }

        /// The field named by UTF-8 `bytes` (a `switch` over strings would compare them in turn).
        init?(bytes: UnsafeBufferPointer<UInt8>) {
            func matches(_ name: StaticString) -> Bool { bytes.equals(name) }
            switch bytes.count {
            case 2 where matches("to"): self = .to
            case 4 where matches("data"): self = .data
            case 7 where matches("dry_run"): self = .dryRun
            case 8 where matches("priority"): self = .priority
            case 9 where matches("condition"): self = .condition
            case 12 where matches("notification"): self = .notification
            case 12 where matches("collapse_key"): self = .collapseKey
            case 12 where matches("time_to_live"): self = .timeToLive
            case 15 where matches("mutable_content"): self = .mutableContent
            case 16 where matches("registration_ids"): self = .registrationIDs
            case 16 where matches("notification_key"): self = .notificationKey
            case 16 where matches("delay_while_idle"): self = .delayWhileIdle
            case 17 where matches("content_available"): self = .contentAvailable
            case 23 where matches("restricted_package_name"): self = .restrictedPackageName
            default: return nil
            }
        }
    }

    private static func string(_ value: JSONValue, field: String) throws(FCMError) -> String {
        guard case .string(let string) = value else { throw FCMError.fieldType(field, mustBe: "string", value: value) }
        return string
    }

    private static func bool(_ value: JSONValue, field: String) throws(FCMError) -> Bool {
        guard case .bool(let flag) = value else { throw FCMError.fieldType(field, mustBe: "boolean", value: value) }
        return flag
    }

    /// Parses a body by its `Content-Type`, as ``Encoding/init(contentType:body:)`` reads it: JSON →
    /// ``parse(json:limits:)``, form → ``parse(form:)``.
    public static func parse(
        body: [UInt8],
        contentType: String?,
        limits: JSONParseLimits = .default
    ) throws(FCMError) -> FCMSendRequest {
        switch Encoding(contentType: contentType, body: body) {
        case .json: try parse(json: body, limits: limits)
        case .form: try parse(form: body)
        }
    }
}

