public import PushRelayWire

extension FCMSendRequest {
    /// Parses and validates a JSON body (`Content-Type: application/json`).
    ///
    /// Throws `400` errors: `JSON_PARSING_ERROR: …`, `Field "to" must be a JSON string: 5`,
    /// `"registration_ids" field is not a JSON array`, `"registration_ids" field cannot be empty`,
    /// `Number of messages on bulk (1001) exceeds maximum allowed (1000)`, and `InvalidParameters` for a malformed
    /// topic, condition or priority. Unknown fields are ignored, as FCM does; a `null` field counts as absent.
    public static func parse(json bytes: [UInt8], limits: JSONParseLimits = .default) throws(FCMError) -> FCMSendRequest {
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
            switch key {
            case "to": fields.to = try string(value, field: key)
            case "registration_ids":
                guard case .array(let elements) = value else { throw FCMError.registrationIDsNotArray }
                registrationIDs = elements
            case "condition": fields.condition = try string(value, field: key)
            case "notification_key": fields.notificationKey = try string(value, field: key)
            case "collapse_key": fields.collapseKey = try string(value, field: key)
            case "priority": fields.priority = try FCMSendFields.priority(try string(value, field: key))
            case "content_available": fields.contentAvailable = try bool(value, field: key)
            case "mutable_content": fields.mutableContent = try bool(value, field: key)
            case "dry_run": fields.dryRun = try bool(value, field: key)
            case "delay_while_idle": fields.delayWhileIdle = try bool(value, field: key)
            case "restricted_package_name": fields.restrictedPackageName = try string(value, field: key)
            case "time_to_live":
                guard case .number(let number) = value else {
                    throw FCMError.fieldType(key, mustBe: "number", value: value)
                }
                fields.timeToLive = number.int64Value ?? -1
            case "data":
                guard case .object(let data) = value else { throw FCMError.fieldType(key, mustBe: "array", value: value) }
                fields.data = data
            case "notification":
                guard case .object(let notification) = value else {
                    throw FCMError.fieldType(key, mustBe: "array", value: value)
                }
                fields.notification = notification
            default: continue
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

