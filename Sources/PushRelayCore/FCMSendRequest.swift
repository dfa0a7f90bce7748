public import PushRelayWire

/// A parsed and validated FCM legacy send request (`POST /fcm/send`), from JSON or from the form-encoded
/// plain-text variant.
///
/// Parsing (``parse(json:limits:)``, ``parse(form:)``, ``parse(body:contentType:)``) throws an ``FCMError``
/// for problems that answer the whole request (`400`: bad JSON, wrong field types, empty or oversized
/// `registration_ids`, a malformed topic or condition). Problems that FCM answers per target with a `200`
/// are kept in the value: ``recipients`` carry `MissingRegistration`/`InvalidRegistration`, and
/// ``messageError`` (`InvalidDataKey`, `InvalidTtl`, `MessageTooBig`) applies to every target (a device group's
/// members included).
public struct FCMSendRequest: Sendable, Hashable {
    /// `priority`.
    public enum Priority: String, Sendable, Hashable {
        /// `"normal"` (APNs 5).
        case normal
        /// `"high"` (APNs 10).
        case high
    }

    /// How the request body was encoded; the answer uses the same family (JSON or `id=`/`Error=` text).
    public enum Encoding: Sendable, Hashable {
        /// `application/json`.
        case json
        /// `application/x-www-form-urlencoded` (or no content type), answered in plain text.
        case form

        /// The one rule for how a send's body is read and answered (its errors too): the media type
        /// `application/json` (any case, parameters ignored) is JSON; any other is plain text, as FCM treats a
        /// missing content type. One leniency: without a `Content-Type`, a body whose first non-blank byte is `{`
        /// is JSON (curl users forget the header). `body` nil: the body is not read yet (an answer from the head
        /// alone), so no `Content-Type` means plain text.
        public init(contentType: String?, body: [UInt8]?) {
            if var contentType {
                // This runs for every send: one pass over the bytes (String's generic searches cost ~2,000
                // instructions here).
                self = contentType.withUTF8 { Self.isJSONMediaType($0) } ? .json : .form
            } else if let body, body.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) == UInt8(ascii: "{") {
                self = .json
            } else {
                self = .form
            }
        }

        /// Whether a `Content-Type` value's media type (before any `;` parameter, blanks around it ignored) is
        /// `application/json` in any case.
        static func isJSONMediaType(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            var end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
            var start = 0
            while start < end, bytes[start].isSpaceOrTab { start += 1 }
            while end > start, bytes[end - 1].isSpaceOrTab { end -= 1 }
            return startsIgnoringASCIICase(bytes[start..<end], "application/json") && end - start == 16
        }
    }

    /// How the body was encoded.
    public var encoding: Encoding
    /// Where the message goes (tokens, a topic, a condition, or a device group).
    public var addressing: FCMAddressing
    /// `collapse_key`.
    public var collapseKey: String?
    /// `priority` as given; see ``effectivePriority``.
    public var priority: Priority?
    /// `content_available`.
    public var contentAvailable: Bool
    /// `mutable_content`.
    public var mutableContent: Bool
    /// `time_to_live` in seconds as given (default 2,419,200). Out of range values set ``messageError`` to
    /// `InvalidTtl`; a non-integer number is kept here as `-1`.
    public var timeToLive: Int64
    /// `dry_run`: validate and answer, deliver nothing (results carry `fake_message_id`).
    public var dryRun: Bool
    /// `restricted_package_name`.
    public var restrictedPackageName: String?
    /// `data`, keys in order, values as sent (the legacy API accepts any JSON value).
    public var data: JSONObject? {
        get { storedData?.object }
        set {
            storedData = newValue.map(FCMPayloadObject.init)
            envelope.members = nil
        }
    }
    /// `notification`, every key in order, custom keys (such as `orderInfo`) kept as JSON values.
    public var notification: JSONObject? {
        get { storedNotification?.object }
        set {
            storedNotification = newValue.map(FCMPayloadObject.init)
            envelope.members = nil
        }
    }
    /// ``data`` as parsed or as the scan left it (``FCMPayloadObject``).
    var storedData: FCMPayloadObject?
    /// ``notification`` as parsed or as the scan left it.
    var storedNotification: FCMPayloadObject?
    /// The envelope's members that the scan of a JSON body wrote (``FCMEnvelopeMembers``); none when ``Envelope``
    /// writes them from the objects.
    var envelope = FCMEnvelopeCache()
    /// `delay_while_idle` (deprecated; accepted and ignored).
    public var delayWhileIdle: Bool
    /// An error for the message as a whole, answered for every target: `InvalidDataKey`, `InvalidTtl` or
    /// `MessageTooBig` (checked in that order).
    public var messageError: FCMError?
    /// The payload size by the ``FCMPayloadSize`` rule.
    public var payloadSize: Int
    /// What an FCM HTTP v1 message's `apns.payload` carries beyond the legacy fields (nil for legacy sends).
    public var apnsExtras: APNsPayloadExtras?

    /// A request with the given addressing and defaults for every option (not validated; for tests and tools).
    public init(addressing: FCMAddressing, encoding: Encoding = .json) {
        self.encoding = encoding
        self.addressing = addressing
        self.collapseKey = nil
        self.priority = nil
        self.contentAvailable = false
        self.mutableContent = false
        self.timeToLive = FCMLimits.defaultTimeToLive
        self.dryRun = false
        self.restrictedPackageName = nil
        self.storedData = nil
        self.storedNotification = nil
        self.delayWhileIdle = false
        self.messageError = nil
        self.payloadSize = 0
        self.apnsExtras = nil
    }

    /// The priority that applies: as given, else `high` for notification messages and `normal` for data messages.
    public var effectivePriority: Priority {
        priority ?? (storedNotification == nil ? .normal : .high)
    }

    /// The token recipients in request order (empty for topic, condition and device-group sends).
    public var recipients: [FCMRecipient] {
        if case .tokens(let recipients) = addressing { return recipients }
        return []
    }

    /// Whether the answer is the token form (`multicast_id`, `results[]`) rather than the topic form.
    public var isTokenSend: Bool {
        if case .tokens = addressing { return true }
        return false
    }
}

/// The parts of an FCM HTTP v1 `apns.payload` that no legacy field carries; the envelope writes them as they are.
public struct APNsPayloadExtras: Sendable, Hashable {
    /// `aps` keys without a legacy counterpart (`thread-id`, `interruption-level`, a critical `sound` dictionary, …),
    /// written inside `aps` after the mapped keys.
    public var aps: JSONObject
    /// `aps.alert` keys without a legacy counterpart (`launch-image`, `subtitle-loc-key`, …), written inside `alert`.
    public var alert: JSONObject
    /// The custom top-level keys of `apns.payload`, written at the envelope's top level with their JSON values.
    public var custom: JSONObject

    /// Extras.
    public init(aps: JSONObject = JSONObject(), alert: JSONObject = JSONObject(), custom: JSONObject = JSONObject()) {
        self.aps = aps
        self.alert = alert
        self.custom = custom
    }

    /// Whether there is nothing to write.
    public var isEmpty: Bool { aps.isEmpty && alert.isEmpty && custom.isEmpty }
}

/// Where a send goes.
public enum FCMAddressing: Sendable, Hashable {
    /// `to` with a token, or `registration_ids`, in request order. A request without any target is
    /// `.tokens([FCMRecipient(token: "", error: .missingRegistration)])`, which FCM answers as one failed result.
    case tokens([FCMRecipient])
    /// `to: "/topics/<name>"`.
    case topic(TopicName)
    /// `condition`.
    case condition(TopicCondition)
    /// `to` (or the deprecated `notification_key`) with a device group's ``NotificationKey`` (JSON only: a plain-text
    /// `registration_id` names one token). The relay sends a copy to each member and answers FCM's group form
    /// (``FCMDeviceGroupResponse``).
    case deviceGroup(NotificationKey)
}

/// One token target of a send and what validation already knows about it.
public struct FCMRecipient: Sendable, Hashable {
    /// The token as sent (`""` when missing; a non-string `registration_ids` element as its JSON text).
    public var token: String
    /// `MissingRegistration`, `InvalidRegistration`, or the request's ``FCMSendRequest/messageError``; `nil` when
    /// the token is well formed and the message valid: the relay then looks the token up (`NotRegistered`,
    /// `MismatchSenderId`, `InvalidPackageName`) and queues.
    public var error: FCMError?

    /// A recipient.
    public init(token: String, error: FCMError? = nil) {
        self.token = token
        self.error = error
    }
}
