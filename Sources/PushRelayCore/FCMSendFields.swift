public import PushRelayWire

/// The fields of a send as read from JSON or a form, before validation; shared by both parsers so that the
/// rules (addressing, per-target and message-wide errors) live in one place.
struct FCMSendFields {
    var to: String?
    var registrationIDs: [String]?
    var nonStringRegistrationIDs: [Int] = []
    var condition: String?
    var notificationKey: String?
    var collapseKey: String?
    var priority: FCMSendRequest.Priority?
    var contentAvailable = false
    var mutableContent = false
    var dryRun = false
    var delayWhileIdle = false
    var restrictedPackageName: String?
    var timeToLive: Int64 = FCMLimits.defaultTimeToLive
    var data: JSONObject?
    var notification: JSONObject?
    /// What the scan of a JSON body read instead of `data` and `notification` (``FCMSendScan``).
    var scanned: FCMScannedPayload?

    /// `"normal"`, `"high"`, and APNs' `"5"`/`"10"` (unconfirmed in FCM, accepted here); else `InvalidParameters`.
    static func priority(_ text: String) throws(FCMError) -> FCMSendRequest.Priority {
        switch text {
        case "high", "10": return .high
        case "normal", "5": return .normal
        default: throw FCMError.invalidParameters("priority must be \"normal\" or \"high\"")
        }
    }

    /// Validates and builds the request.
    func makeRequest(encoding: FCMSendRequest.Encoding) throws(FCMError) -> FCMSendRequest {
        let to = self.to ?? notificationKey
        if to != nil && registrationIDs != nil { throw FCMError.toAndRegistrationIDs }
        if condition != nil && (to != nil || registrationIDs != nil) { throw FCMError.conditionAndTokens }

        var request = FCMSendRequest(addressing: .tokens([]), encoding: encoding)
        // An empty collapse key or package name is no value (as proto3 reads it in FCM HTTP v1): `""` collapsing
        // every message of the device, or matching no app, is what no sender means.
        request.collapseKey = collapseKey.flatMap { $0.isEmpty ? nil : $0 }
        request.priority = priority
        request.contentAvailable = contentAvailable
        request.mutableContent = mutableContent
        request.timeToLive = timeToLive
        request.dryRun = dryRun
        request.delayWhileIdle = delayWhileIdle
        request.restrictedPackageName = restrictedPackageName.flatMap { $0.isEmpty ? nil : $0 }
        if let scanned {
            // `data` stays nil here, so messageError below skips the reserved-key test: the scan leaves a body with a
            // reserved `data` key to the full parser.
            let source = scanned.envelopeMembers.source
            request.storedData = scanned.data.map { FCMPayloadObject(source: source, range: $0) }
            request.storedNotification = scanned.notification.map { FCMPayloadObject(source: source, range: $0) }
            request.payloadSize = scanned.payloadSize
            request.envelope.members = scanned.envelopeMembers
        } else {
            request.data = data
            request.notification = notification
            request.payloadSize = FCMPayloadSize.of(data: data, notification: notification)
        }

        let isTopicSend: Bool
        if let condition {
            do {
                request.addressing = .condition(try TopicCondition.parse(condition))
            } catch {
                throw FCMError.invalidParameters(error.reason)
            }
            isTopicSend = true
        } else if let to, to.hasPrefix(TopicName.prefix) {
            guard let topic = TopicName(to) else { throw FCMError.invalidParameters("Invalid topic name: \(to)") }
            request.addressing = .topic(topic)
            isTopicSend = true
        } else {
            isTopicSend = false
        }
        request.messageError = Self.messageError(
            data: data,
            timeToLive: timeToLive,
            payloadSize: request.payloadSize,
            limit: isTopicSend ? FCMLimits.maxTopicPayloadBytes : FCMLimits.maxPayloadBytes
        )
        if isTopicSend { return request }
        // A notification key is never a token's shape (it has no `:`): read by its shape, a device group.
        if encoding == .json, let to, let key = NotificationKey(to) {
            request.addressing = .deviceGroup(key)
            return request
        }

        let tokens = registrationIDs ?? [to ?? ""]
        var recipients: [FCMRecipient] = []
        recipients.reserveCapacity(tokens.count)
        for token in tokens {
            let error: FCMError?
            if token.isEmpty {
                error = .missingRegistration
            } else if !RegistrationToken.isWellFormed(token) {
                error = .invalidRegistration
            } else {
                error = request.messageError
            }
            recipients.append(FCMRecipient(token: token, error: error))
        }
        for index in nonStringRegistrationIDs { recipients[index].error = .invalidRegistration }
        request.addressing = .tokens(recipients)
        return request
    }

    /// The message-wide error: `InvalidDataKey`, then `InvalidTtl`, then `MessageTooBig`.
    static func messageError(data: JSONObject?, timeToLive: Int64, payloadSize: Int, limit: Int) -> FCMError? {
        if let data, data.entries.contains(where: { FCMDataKey.isReserved($0.key) }) { return .invalidDataKey }
        if timeToLive < 0 || timeToLive > FCMLimits.maxTimeToLive { return .invalidTtl }
        if payloadSize > limit { return .messageTooBig }
        return nil
    }
}

/// The `data` key rule.
public enum FCMDataKey {
    /// Whether `key` is reserved in `data` (→ `InvalidDataKey`): `from`, `message_type`, or any key starting with
    /// `google` or `gcm` (case-sensitive, as FCM documents them).
    public static func isReserved(_ key: String) -> Bool {
        key == "from" || key == "message_type" || key.hasPrefix("google") || key.hasPrefix("gcm")
    }

    /// ``isReserved(_:)`` of an ASCII key's bytes.
    static func isReserved(bytes key: UnsafeBufferPointer<UInt8>) -> Bool {
        key.equals("from") || key.equals("message_type") || key.starts(with: "google") || key.starts(with: "gcm")
    }
}

/// How PushRelay measures a payload against the 4096-byte limit.
///
/// The rule: for every member of `data` and of `notification`, the UTF-8 bytes of the key plus the bytes of the
/// value, where a string value counts its UTF-8 bytes (unescaped, without quotes) and any other value counts its
/// compact JSON text (`3` → 1, `true` → 4, `{"a":1}` → 7). Nothing else of the request counts (not `to`, not the
/// options, not JSON punctuation). So `{"data": {"k": "<4095 × v>"}}` is exactly 4096 bytes and accepted; one more
/// byte is `MessageTooBig`.
public enum FCMPayloadSize {
    /// The payload size of a request's `data` and `notification`.
    public static func of(data: JSONObject?, notification: JSONObject?) -> Int {
        size(of: data) + size(of: notification)
    }

    private static func size(of object: JSONObject?) -> Int {
        guard let object else { return 0 }
        var total = 0
        for member in object.entries {
            total += member.key.utf8.count
            let value = member.value
            switch value {
            case .string(let string): total += string.utf8.count
            case .number(let number): total += number.text.utf8.count
            case .bool(let flag): total += flag ? 4 : 5
            case .null: total += 4
            default: total += JSONWriter.serializedCount(value)
            }
        }
        return total
    }
}
