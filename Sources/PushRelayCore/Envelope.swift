/// The device-visible message: what FCM hands an iOS app as `userInfo`, as one line of JSON.
///
/// Built once per send from a validated request (``init(request:senderID:)``) and stored as ``body``: a JSON
/// object **without** `gcm.message_id`. Each delivery splices the id in front with ``render(messageID:into:)``:
///
///     {"gcm.message_id":"1603214613006763","google.c.sender.id":"19283323559","google.c.a.e":"1",
///      "aps":{"alert":{"title":"Provedor de Mensagens","body":"Status do pedido"},"content-available":1},
///      "gcm.notification.orderInfo":"{\"infoReason\":\"Status de pedido\",\"orderID\":3,…}",
///      "from":"19283323559"}
///
/// Key mapping (docs/protocol.md, "Envelope"):
/// - `google.c.sender.id`: the project's sender id; `google.c.a.e`: `"1"`;
/// - `aps.alert`: `title`, `subtitle`, `body`, `title-loc-key`, `title-loc-args`, `loc-key`, `loc-args` from
///   `notification.title`, `.subtitle`, `.body`, `.title_loc_key`, `.title_loc_args`, `.body_loc_key`,
///   `.body_loc_args`; `aps.badge` (a number when the value is an integer), `aps.sound`, `aps.category`
///   (`click_action`), `aps.content-available: 1` (`content_available`), `aps.mutable-content: 1`
///   (`mutable_content`); `aps` is left out when empty;
/// - `gcm.notification.<key>`: every other `notification` key, as a string (strings as they are, any other value
///   as its compact JSON text);
/// - each `data` key at the top level, as a string (same rule), in the sender's order; a `data` key `aps`, or
///   `collapse_key` when the request sets one, is dropped (the relay's own key wins, as FCM overwrites them);
/// - `collapse_key` when set; `from`: the sender id, or `/topics/<name>` for a topic send (a condition send
///   gives the sender id).
public struct Envelope: Sendable, Hashable {
    /// The stored form: a one-line JSON object without `gcm.message_id`.
    public let body: [UInt8]

    /// Wraps a stored body (as read back from the store).
    public init(body: [UInt8]) { self.body = body }

    /// Builds the envelope of a validated send.
    public init(request: FCMSendRequest, senderID: SenderID) {
        var builder = EnvelopeBuilder(capacity: 128 + request.payloadSize * 5 / 4)
        let sender = senderID.description
        builder.member("google.c.sender.id", string: sender)
        builder.member("google.c.a.e", string: "1")
        builder.appendAPS(request: request)
        if let notification = request.notification {
            for (key, value) in notification.entries where !EnvelopeBuilder.apsNotificationKeys.contains(key) {
                builder.member("gcm.notification." + key, string: value.stringOrJSONText)
            }
        }
        if let data = request.data {
            for (key, value) in data.entries {
                if key == "aps" || (key == "collapse_key" && request.collapseKey != nil) { continue }
                builder.member(key, string: value.stringOrJSONText)
            }
        }
        if let collapseKey = request.collapseKey { builder.member("collapse_key", string: collapseKey) }
        if case .topic(let topic) = request.addressing {
            builder.member("from", string: topic.path)
        } else {
            builder.member("from", string: sender)
        }
        self.body = builder.finish()
    }

    /// The `deleted_messages` event: queued once when a device's pending messages were dropped past the limit.
    ///
    ///     {"google.c.sender.id":"19283323559","message_type":"deleted_messages","from":"19283323559"}
    public static func deletedMessages(senderID: SenderID) -> Envelope {
        var builder = EnvelopeBuilder(capacity: 96)
        builder.member("google.c.sender.id", string: senderID.description)
        builder.member("message_type", string: "deleted_messages")
        builder.member("from", string: senderID.description)
        return Envelope(body: builder.finish())
    }

    /// Appends the delivered envelope: `{"gcm.message_id":"<id>",` followed by the body after its `{`.
    public func render(messageID: MessageID, into buffer: inout [UInt8]) {
        buffer.append(contentsOf: prefix(messageID: messageID))
        buffer.append(contentsOf: tail)
    }

    /// The delivered envelope as new bytes.
    public func rendered(messageID: MessageID) -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(body.count + 40)
        render(messageID: messageID, into: &buffer)
        return buffer
    }

    /// The first part of the delivered envelope: `{"gcm.message_id":"<id>"` and a `,` unless the body is `{}`.
    /// Writers that own another buffer type write this, then ``tail``.
    public func prefix(messageID: MessageID) -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(44)
        JSONWriter.appendRaw("{\"gcm.message_id\":\"", to: &buffer)
        messageID.write(into: &buffer)
        buffer.append(UInt8(ascii: "\""))
        if body.count > 2 { buffer.append(UInt8(ascii: ",")) }
        return buffer
    }

    /// The body after its opening `{` (so it ends with `}`); for a body `{}` just `}`.
    public var tail: ArraySlice<UInt8> {
        body.count > 1 ? body[1...] : [UInt8(ascii: "}")][...]
    }
}

/// Writes the envelope's members with one growing buffer.
struct EnvelopeBuilder {
    /// `notification` keys that go into `aps` instead of `gcm.notification.<key>`.
    static let apsNotificationKeys: Set<String> = [
        "title", "subtitle", "body", "title_loc_key", "title_loc_args", "body_loc_key", "body_loc_args",
        "badge", "sound", "click_action",
    ]

    private var buffer: [UInt8]
    private var isFirst = true

    init(capacity: Int) {
        buffer = []
        buffer.reserveCapacity(capacity)
        buffer.append(UInt8(ascii: "{"))
    }

    mutating func finish() -> [UInt8] {
        buffer.append(UInt8(ascii: "}"))
        return buffer
    }

    private mutating func key(_ key: String) {
        if !isFirst { buffer.append(UInt8(ascii: ",")) }
        isFirst = false
        JSONWriter.appendString(key, to: &buffer)
        buffer.append(UInt8(ascii: ":"))
    }

    mutating func member(_ name: String, string: String) {
        key(name)
        JSONWriter.appendString(string, to: &buffer)
    }

    mutating func appendAPS(request: FCMSendRequest) {
        let notification = request.notification ?? JSONObject()
        var aps = JSONObject()
        var alert = JSONObject()
        for (source, target) in [
            ("title", "title"), ("subtitle", "subtitle"), ("body", "body"), ("title_loc_key", "title-loc-key"),
        ] {
            if let value = notification[source], !value.isNull { alert[target] = .string(value.stringOrJSONText) }
        }
        if let value = notification["title_loc_args"], !value.isNull { alert["title-loc-args"] = Self.args(value) }
        if let value = notification["body_loc_key"], !value.isNull { alert["loc-key"] = .string(value.stringOrJSONText) }
        if let value = notification["body_loc_args"], !value.isNull { alert["loc-args"] = Self.args(value) }
        if !alert.isEmpty { aps["alert"] = .object(alert) }
        if let badge = notification["badge"], !badge.isNull {
            if let number = badge.int64Value ?? badge.stringValue.flatMap({ Int64($0) }) {
                aps["badge"] = .integer(number)
            } else {
                aps["badge"] = .string(badge.stringOrJSONText)
            }
        }
        if let sound = notification["sound"], !sound.isNull { aps["sound"] = .string(sound.stringOrJSONText) }
        if let category = notification["click_action"], !category.isNull {
            aps["category"] = .string(category.stringOrJSONText)
        }
        if request.contentAvailable { aps["content-available"] = 1 }
        if request.mutableContent { aps["mutable-content"] = 1 }
        guard !aps.isEmpty else { return }
        key("aps")
        JSONWriter.append(.object(aps), to: &buffer)
    }

    /// Localization arguments as an array of strings: a JSON array, a string holding a JSON array (admin-node's
    /// form), or a single string.
    static func args(_ value: JSONValue) -> JSONValue {
        var elements: [JSONValue]
        switch value {
        case .array(let array): elements = array
        case .string(let text):
            if let parsed = try? JSONValue.parse(text), case .array(let array) = parsed {
                elements = array
            } else {
                elements = [.string(text)]
            }
        default: elements = [value]
        }
        return .array(elements.map { .string($0.stringOrJSONText) })
    }
}
