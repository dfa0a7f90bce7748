import PushRelayWire

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
    public init(request: borrowing FCMSendRequest, senderID: SenderID) {
        var builder = EnvelopeBuilder(capacity: 160 + request.payloadSize + request.payloadSize / 4)
        builder.senderHeader(senderID)
        if let members = request.envelope.members, members.contentAvailable == request.contentAvailable,
            members.mutableContent == request.mutableContent, request.apnsExtras == nil
        {
            // As the scan of the body read them (FCMSendScan): what appendMembers(of:) would write.
            builder.append(scanned: members)
        } else {
            builder.appendMembers(of: request)
        }
        if let collapseKey = request.collapseKey { builder.member(#""collapse_key":"#, string: collapseKey) }
        if case .topic(let topic) = request.addressing {
            builder.member(#""from":"#, string: topic.path)
        } else {
            builder.from(senderID)
        }
        self.body = builder.finish()
    }

    /// The `deleted_messages` event: queued once when a device's pending messages were dropped past the limit.
    ///
    ///     {"google.c.sender.id":"19283323559","message_type":"deleted_messages","from":"19283323559"}
    public static func deletedMessages(senderID: SenderID) -> Envelope {
        var builder = EnvelopeBuilder(capacity: 96)
        builder.senderHeader(senderID, analytics: false)
        builder.member(#""message_type":"#, string: "deleted_messages")
        builder.from(senderID)
        return Envelope(body: builder.finish())
    }

    /// Appends the delivered envelope: `{"gcm.message_id":"<id>",` followed by the body after its `{`.
    public func render(messageID: MessageID, into buffer: inout [UInt8]) {
        appendPrefix(messageID: messageID, to: &buffer)
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
        appendPrefix(messageID: messageID, to: &buffer)
        return buffer
    }

    /// ``prefix(messageID:)`` written into `buffer` (a delivery renders into one buffer, without an array per event).
    private func appendPrefix(messageID: MessageID, to buffer: inout [UInt8]) {
        JSONWriter.appendRaw("{\"gcm.message_id\":\"", to: &buffer)
        messageID.write(into: &buffer)
        buffer.append(UInt8(ascii: "\""))
        if body.count > 2 { buffer.append(UInt8(ascii: ",")) }
    }

    /// The body after its opening `{` (so it ends with `}`); for a body `{}` just `}`.
    public var tail: ArraySlice<UInt8> {
        body.count > 1 ? body[1...] : [UInt8(ascii: "}")][...]
    }
}

/// The `notification` keys that go into `aps`, collected in one pass.
struct APSFields {
    var title: JSONValue?
    var subtitle: JSONValue?
    var body: JSONValue?
    var titleLocKey: JSONValue?
    var titleLocArgs: JSONValue?
    var bodyLocKey: JSONValue?
    var bodyLocArgs: JSONValue?
    var badge: JSONValue?
    var sound: JSONValue?
    var clickAction: JSONValue?

    /// Keeps `member` if it is an `aps` key; `null` values count as absent.
    mutating func take(_ member: JSONObject.Member) {
        if case .null = member.value { return }
        switch member.key {
        case "title": title = member.value
        case "subtitle": subtitle = member.value
        case "body": body = member.value
        case "title_loc_key": titleLocKey = member.value
        case "title_loc_args": titleLocArgs = member.value
        case "body_loc_key": bodyLocKey = member.value
        case "body_loc_args": bodyLocArgs = member.value
        case "badge": badge = member.value
        case "sound": sound = member.value
        case "click_action": clickAction = member.value
        default: return
        }
    }

    /// Whether `key` maps into `aps` rather than `gcm.notification.<key>`.
    static func isAPSKey(_ key: String) -> Bool {
        switch key {
        case "title", "subtitle", "body", "title_loc_key", "title_loc_args", "body_loc_key", "body_loc_args", "badge",
            "sound", "click_action":
            true
        default: false
        }
    }

    var hasAlert: Bool {
        title != nil || subtitle != nil || body != nil || titleLocKey != nil || titleLocArgs != nil
            || bodyLocKey != nil || bodyLocArgs != nil
    }
}

/// Writes the envelope's members straight into one growing buffer.
struct EnvelopeBuilder {
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

    private mutating func separator() {
        if !isFirst { buffer.append(UInt8(ascii: ",")) }
        isFirst = false
    }

    /// `{"google.c.sender.id":"<id>"` and, with `analytics`, `,"google.c.a.e":"1"`; must come first.
    mutating func senderHeader(_ sender: SenderID, analytics: Bool = true) {
        JSONWriter.appendRaw(#""google.c.sender.id":""#, to: &buffer)
        JSONWriter.appendDecimal(sender.value, to: &buffer)
        if analytics {
            JSONWriter.appendRaw(#"","google.c.a.e":"1""#, to: &buffer)
        } else {
            buffer.append(UInt8(ascii: "\""))
        }
        isFirst = false
    }

    /// The members between the sender header and `collapse_key`: `aps`, the `gcm.notification.` keys, the `data`
    /// keys, a v1 request's custom `apns.payload` keys.
    mutating func appendMembers(of request: FCMSendRequest) {
        let notification = request.notification
        let data = request.data
        var aps = APSFields()
        if let notification {
            for member in notification.entries { aps.take(member) }
        }
        appendAPS(aps, request: request)
        if let notification {
            for member in notification.entries where !APSFields.isAPSKey(member.key) {
                self.member(prefix: "gcm.notification.", key: member.key, stringOrJSON: member.value)
            }
        }
        if let data {
            for member in data.entries {
                if member.key == "aps" || (member.key == "collapse_key" && request.collapseKey != nil) { continue }
                self.member(prefix: "", key: member.key, stringOrJSON: member.value)
            }
        }
        if let custom = request.apnsExtras?.custom {
            // v1 `apns.payload` custom keys, as JSON values (APNs payloads are JSON); a `data` key of the same name
            // was written already and wins.
            for member in custom.entries where data?[member.key] == nil {
                self.member(prefix: "", key: member.key, json: member.value)
            }
        }
    }

    /// ``appendMembers(of:)`` for a body read by ``FCMSendScan``: `aps` from the strings' places in the body (the
    /// keys it reads: strings, and the badge), then the members it wrote.
    mutating func append(scanned members: FCMEnvelopeMembers) {
        let aps = members.aps
        if aps.hasAlert || aps.badge != nil || aps.sound != nil || aps.clickAction != nil || members.contentAvailable
            || members.mutableContent
        {
            separator()
            JSONWriter.appendRaw(#""aps":{"#, to: &buffer)
            var first = true
            if aps.hasAlert {
                field(#""alert":"#, first: &first)
                buffer.append(UInt8(ascii: "{"))
                var alertFirst = true
                rawStringField(#""title":"#, aps.title, in: members.source, first: &alertFirst)
                rawStringField(#""subtitle":"#, aps.subtitle, in: members.source, first: &alertFirst)
                rawStringField(#""body":"#, aps.body, in: members.source, first: &alertFirst)
                rawStringField(#""title-loc-key":"#, aps.titleLocKey, in: members.source, first: &alertFirst)
                rawStringField(#""loc-key":"#, aps.bodyLocKey, in: members.source, first: &alertFirst)
                buffer.append(UInt8(ascii: "}"))
            }
            switch aps.badge {
            case .number(let number):
                field(#""badge":"#, first: &first)
                JSONWriter.appendDecimal(number, to: &buffer)
            case .string(let text):
                rawStringField(#""badge":"#, text, in: members.source, first: &first)
            case nil:
                break
            }
            rawStringField(#""sound":"#, aps.sound, in: members.source, first: &first)
            rawStringField(#""category":"#, aps.clickAction, in: members.source, first: &first)
            if members.contentAvailable { field(#""content-available":1"#, first: &first) }
            if members.mutableContent { field(#""mutable-content":1"#, first: &first) }
            buffer.append(UInt8(ascii: "}"))
        }
        buffer.append(contentsOf: members.notification)
        buffer.append(contentsOf: members.data)
        isFirst = false
    }

    /// `"name":"<bytes of value>"` for a string whose bytes need no escape (a plain string of the body).
    private mutating func rawStringField(
        _ name: StaticString, _ value: Range<Int>?, in source: [UInt8], first: inout Bool
    ) {
        guard let value else { return }
        field(name, first: &first)
        buffer.append(UInt8(ascii: "\""))
        buffer.append(contentsOf: source[value])
        buffer.append(UInt8(ascii: "\""))
    }

    /// `"from":"<sender id>"`.
    mutating func from(_ sender: SenderID) {
        JSONWriter.appendRaw(#","from":""#, to: &buffer)
        JSONWriter.appendDecimal(sender.value, to: &buffer)
        buffer.append(UInt8(ascii: "\""))
    }

    /// A member whose key is known: `quotedKey` is written as it is (`"name":`).
    mutating func member(_ quotedKey: StaticString, string: String) {
        separator()
        JSONWriter.appendRaw(quotedKey, to: &buffer)
        JSONWriter.appendString(string, to: &buffer)
    }

    /// `"<prefix><key>":<value as JSON>`.
    mutating func member(prefix: StaticString, key: String, json value: JSONValue) {
        memberKey(prefix: prefix, key: key)
        JSONWriter.append(value, to: &buffer)
    }

    /// `"<prefix><key>":"<value as string>"`: strings as they are, other values as escaped compact JSON text.
    mutating func member(prefix: StaticString, key: String, stringOrJSON value: JSONValue) {
        memberKey(prefix: prefix, key: key)
        Self.appendStringOrJSON(value, to: &buffer)
    }

    /// A separator unless first, then `"<prefix><key>":`.
    private mutating func memberKey(prefix: StaticString, key: String) {
        separator()
        buffer.append(UInt8(ascii: "\""))
        JSONWriter.appendRaw(prefix, to: &buffer)
        JSONWriter.appendEscaped(key, to: &buffer)
        JSONWriter.appendRaw("\":", to: &buffer)
    }

    private static func appendStringOrJSON(_ value: JSONValue, to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\""))
        switch value {
        case .string(let string): JSONWriter.appendEscaped(string, to: &buffer)
        case .number(let number): buffer.append(contentsOf: number.text.utf8)
        case .bool(let flag): JSONWriter.appendRaw(flag ? "true" : "false", to: &buffer)
        case .null: JSONWriter.appendRaw("null", to: &buffer)
        case .array, .object: JSONWriter.appendEscapedJSON(value, to: &buffer)
        }
        buffer.append(UInt8(ascii: "\""))
    }

    /// Writes `quotedKey` (`"name":`) after a comma unless it is the first member.
    private mutating func field(_ quotedKey: StaticString, first: inout Bool) {
        if !first { buffer.append(UInt8(ascii: ",")) }
        first = false
        JSONWriter.appendRaw(quotedKey, to: &buffer)
    }

    /// `"<key>":<JSON value>` after a comma unless it is the first member.
    private mutating func jsonField(_ member: JSONObject.Member, first: inout Bool) {
        if !first { buffer.append(UInt8(ascii: ",")) }
        first = false
        JSONWriter.appendString(member.key, to: &buffer)
        buffer.append(UInt8(ascii: ":"))
        JSONWriter.append(member.value, to: &buffer)
    }

    private mutating func stringField(_ name: StaticString, _ value: JSONValue?, first: inout Bool) {
        guard let value else { return }
        field(name, first: &first)
        Self.appendStringOrJSON(value, to: &buffer)
    }

    private mutating func argsField(_ name: StaticString, _ value: JSONValue?, first: inout Bool) {
        guard let value else { return }
        field(name, first: &first)
        JSONWriter.append(Self.args(value), to: &buffer)
    }

    mutating func appendAPS(_ aps: APSFields, request: FCMSendRequest) {
        let hasBadgeSoundCategory = aps.badge != nil || aps.sound != nil || aps.clickAction != nil
        let extras = request.apnsExtras
        let hasAlert = aps.hasAlert || !(extras?.alert.isEmpty ?? true)
        guard hasAlert || hasBadgeSoundCategory || request.contentAvailable || request.mutableContent
            || !(extras?.aps.isEmpty ?? true)
        else {
            return
        }
        separator()
        JSONWriter.appendRaw(#""aps":{"#, to: &buffer)
        var first = true
        if hasAlert {
            field(#""alert":"#, first: &first)
            buffer.append(UInt8(ascii: "{"))
            var alertFirst = true
            stringField(#""title":"#, aps.title, first: &alertFirst)
            stringField(#""subtitle":"#, aps.subtitle, first: &alertFirst)
            stringField(#""body":"#, aps.body, first: &alertFirst)
            stringField(#""title-loc-key":"#, aps.titleLocKey, first: &alertFirst)
            argsField(#""title-loc-args":"#, aps.titleLocArgs, first: &alertFirst)
            stringField(#""loc-key":"#, aps.bodyLocKey, first: &alertFirst)
            argsField(#""loc-args":"#, aps.bodyLocArgs, first: &alertFirst)
            for member in extras?.alert.entries ?? [] { jsonField(member, first: &alertFirst) }
            buffer.append(UInt8(ascii: "}"))
        }
        if let badge = aps.badge {
            if let number = badge.int64Value ?? badge.stringValue.flatMap({ Int64($0) }) {
                field(#""badge":"#, first: &first)
                JSONWriter.appendDecimal(number, to: &buffer)
            } else {
                stringField(#""badge":"#, badge, first: &first)
            }
        }
        stringField(#""sound":"#, aps.sound, first: &first)
        stringField(#""category":"#, aps.clickAction, first: &first)
        if request.contentAvailable {
            field(#""content-available":"#, first: &first)
            buffer.append(UInt8(ascii: "1"))
        }
        if request.mutableContent {
            field(#""mutable-content":"#, first: &first)
            buffer.append(UInt8(ascii: "1"))
        }
        for member in extras?.aps.entries ?? [] { jsonField(member, first: &first) }
        buffer.append(UInt8(ascii: "}"))
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
