import PushRelayWire

/// The common JSON send read in one pass, without a ``JSONValue`` tree: the fields, the payload's size, and the
/// envelope's members written straight from the body (every send pays for this path, so it is kept cheap).
///
/// It reads the shape senders use: known top-level fields (unknown ones are checked as JSON and ignored, as the full
/// parser ignores them), `notification` whose `aps` keys (`title`, `subtitle`, `body`, `title_loc_key`,
/// `body_loc_key`, `sound`, `click_action`) are strings and whose `badge` is an integer or a string, other
/// `notification` and `data` values of any kind but `null`, strings without escapes, keys in ASCII and not repeated. For anything else — and for every error — it
/// returns nil before it decides anything, and ``FCMSendRequest/parse(json:limits:)`` reads the body with the full
/// parser, which reports the error or reads the rare case. Only ``FCMSendFields/makeRequest(encoding:)`` may throw
/// here, with the same fields the full parser would give it. Both paths give equal requests and byte-equal
/// envelopes: `FCMSendScanTests` and the `json` fuzz target compare them.
struct FCMSendScan {
    private var scanner: JSONScanner
    private var fields = FCMSendFields()
    private var seen: UInt32 = 0
    private var payloadSize = 0
    private var notification: Range<Int>?
    private var data: Range<Int>?
    /// The `aps` keys of `notification`: where their strings are in the body.
    private var aps = APSRanges()
    /// `,"gcm.notification.<key>":"<value>"` for the other `notification` keys, in order.
    private var notificationMembers: [UInt8] = []
    /// `,"<key>":"<value>"` for the `data` keys, in order.
    private var dataMembers: [UInt8] = []

    private init(_ bytes: [UInt8], limits: JSONParseLimits) {
        scanner = JSONScanner(bytes, maxDepth: limits.maxDepth)
    }

    /// The request of a JSON body of the common shape; nil when the full parser must read it.
    static func request(json bytes: [UInt8], limits: JSONParseLimits) throws(FCMError) -> FCMSendRequest? {
        guard bytes.count <= limits.maxBytes, !limits.rejectsDuplicateKeys else { return nil }
        var scan = FCMSendScan(bytes, limits: limits)
        guard scan.readDocument() else { return nil }
        scan.fields.scanned = FCMScannedPayload(
            data: scan.data, notification: scan.notification, payloadSize: scan.payloadSize,
            envelopeMembers: scan.envelopeMembers())
        return try scan.fields.makeRequest(encoding: .json)
    }

    // MARK: The document

    private mutating func readDocument() -> Bool {
        scanner.skipWhitespace()
        guard scanner.enter(UInt8(ascii: "{")) else { return false }
        if !scanner.closeEmpty(UInt8(ascii: "}")) {
            while true {
                guard let key = scanner.key(), readMember(key), let more = scanner.more(closedBy: UInt8(ascii: "}"))
                else { return false }
                if !more { break }
            }
        }
        scanner.skipWhitespace()
        return scanner.isAtEnd
    }

    private mutating func readMember(_ key: Range<Int>) -> Bool {
        guard let field = scanner.withBytes(of: key, { FCMSendRequest.Field(bytes: $0) }) else {
            return scanner.null() || scanner.skipValue()  // ignored, as long as it is JSON
        }
        let bit: UInt32 = 1 << field.rawValue
        guard seen & bit == 0 else { return false }  // repeated: the last value wins, at the first one's place
        seen |= bit
        if scanner.null() { return true }  // a null field counts as absent
        switch field {
        case .to, .condition, .notificationKey, .collapseKey, .restrictedPackageName:
            guard let text = readString() else { return false }
            switch field {
            case .to: fields.to = text
            case .condition: fields.condition = text
            case .notificationKey: fields.notificationKey = text
            case .collapseKey: fields.collapseKey = text
            default: fields.restrictedPackageName = text
            }
        case .priority:
            guard let text = readString(), let priority = try? FCMSendFields.priority(text) else { return false }
            fields.priority = priority
        case .contentAvailable, .mutableContent, .dryRun, .delayWhileIdle:
            guard let flag = scanner.bool() else { return false }
            switch field {
            case .contentAvailable: fields.contentAvailable = flag
            case .mutableContent: fields.mutableContent = flag
            case .dryRun: fields.dryRun = flag
            default: fields.delayWhileIdle = flag
            }
        case .timeToLive:
            guard let number = scanner.number() else { return false }
            fields.timeToLive = scanner.int64(number) ?? -1
        case .registrationIDs: return readRegistrationIDs()
        case .notification:
            guard let object = readObject({ scan, key in scan.readNotificationMember(key) }) else { return false }
            notification = object
        case .data:
            guard let object = readObject({ scan, key in scan.readDataMember(key) }) else { return false }
            data = object
        }
        return true
    }

    private mutating func readString() -> String? {
        scanner.string().map { String(decoding: scanner.bytes[$0], as: UTF8.self) }
    }

    /// An array of 1 to 1,000 plain strings (an empty or longer one, or another element, is the full parser's).
    private mutating func readRegistrationIDs() -> Bool {
        guard scanner.enter(UInt8(ascii: "[")), !scanner.closeEmpty(UInt8(ascii: "]")) else { return false }
        var tokens: [String] = []
        while true {
            guard let token = readString(), tokens.count < FCMLimits.maxRegistrationIDs,
                let more = scanner.more(closedBy: UInt8(ascii: "]"))
            else { return false }
            tokens.append(token)
            if !more { break }
        }
        fields.registrationIDs = tokens
        return true
    }

    // MARK: The payload

    /// An object whose keys are not repeated, each member read by `member`: where it is in the body (its `{` to its
    /// `}`), or nil.
    private mutating func readObject(_ member: (inout FCMSendScan, Range<Int>) -> Bool) -> Range<Int>? {
        let start = scanner.index
        guard scanner.enter(UInt8(ascii: "{")) else { return nil }
        if scanner.closeEmpty(UInt8(ascii: "}")) { return start..<scanner.index }
        let keys = scanner.beginKeys()
        defer { scanner.endKeys(keys) }
        while true {
            guard let key = scanner.key(), scanner.insertKey(key, after: keys), member(&self, key),
                let more = scanner.more(closedBy: UInt8(ascii: "}"))
            else { return nil }
            if !more { return start..<scanner.index }
        }
    }

    private mutating func readNotificationMember(_ key: Range<Int>) -> Bool {
        if let apsKey = scanner.withBytes(of: key, { APSRanges.Key(bytes: $0) }) {
            if apsKey == .badge { return readBadge(key) }
            // Into `aps`: a string (the localization arguments or another value are the full parser's).
            guard let value = scanner.string(), aps.set(apsKey, value) else { return false }
            payloadSize += key.count + value.count
            return true
        }
        guard let size = Self.appendMember(prefix: "gcm.notification.", key: key, of: &scanner, to: &notificationMembers)
        else { return false }
        payloadSize += size
        return true
    }

    /// `badge`: an integer, or a string (`aps.badge` is its integer when it reads as one; another number or value
    /// is the full parser's).
    private mutating func readBadge(_ key: Range<Int>) -> Bool {
        if scanner.next == UInt8(ascii: "\"") {
            guard let value = scanner.string() else { return false }
            let number = Int64(String(decoding: scanner.bytes[value], as: UTF8.self))
            aps.badge = number.map { .number($0) } ?? .string(value)
            payloadSize += key.count + value.count
        } else {
            guard let text = scanner.number(), let number = scanner.int64(text) else { return false }
            aps.badge = .number(number)
            payloadSize += key.count + text.count
        }
        return true
    }

    private mutating func readDataMember(_ key: Range<Int>) -> Bool {
        // `aps` and `collapse_key` give way to the relay's own keys in the envelope, and a reserved key is
        // `InvalidDataKey`: the full parser's cases.
        let ordinary = scanner.withBytes(of: key) { name in
            !FCMDataKey.isReserved(bytes: name) && !name.equals("aps") && !name.equals("collapse_key")
        }
        guard ordinary, let size = Self.appendMember(prefix: "", key: key, of: &scanner, to: &dataMembers) else {
            return false
        }
        payloadSize += size
        return true
    }

    /// `,"<prefix><key>":"<value>"`: a string as it is, any other value (not `null`) as its escaped compact JSON.
    /// Returns the member's payload size (``FCMPayloadSize``), or nil.
    private static func appendMember(
        prefix: StaticString, key: Range<Int>, of scanner: inout JSONScanner, to buffer: inout [UInt8]
    ) -> Int? {
        if buffer.capacity == 0 { buffer.reserveCapacity(min(scanner.bytes.count, 8192)) }
        buffer.append(UInt8(ascii: ","))
        buffer.append(UInt8(ascii: "\""))
        JSONWriter.appendRaw(prefix, to: &buffer)
        buffer.append(contentsOf: scanner.bytes[key])
        JSONWriter.appendRaw("\":\"", to: &buffer)
        let size: Int
        switch scanner.next {
        case UInt8(ascii: "\""):
            guard let value = scanner.string() else { return nil }
            buffer.append(contentsOf: scanner.bytes[value])
            size = value.count
        default:
            guard let count = scanner.copyEscaped(into: &buffer) else { return nil }
            size = count
        }
        buffer.append(UInt8(ascii: "\""))
        return key.count + size
    }

    // MARK: The envelope

    /// What the envelope needs of the scan (``EnvelopeBuilder/append(scanned:)`` writes it).
    private func envelopeMembers() -> FCMEnvelopeMembers {
        FCMEnvelopeMembers(
            source: scanner.bytes, aps: aps, notification: notificationMembers, data: dataMembers,
            contentAvailable: fields.contentAvailable, mutableContent: fields.mutableContent)
    }
}

/// Where the strings of `notification`'s `aps` keys are in the body.
struct APSRanges: Sendable {
    enum Key {
        case title, subtitle, body, titleLocKey, bodyLocKey, sound, clickAction, badge, other

        /// The `aps` key named by `bytes` (``APSFields/isAPSKey(_:)``'s keys; `other` for the localization
        /// arguments), or nil.
        init?(bytes: UnsafeBufferPointer<UInt8>) {
            func matches(_ name: StaticString) -> Bool { bytes.equals(name) }
            switch bytes.count {
            case 4 where matches("body"): self = .body
            case 5 where matches("title"): self = .title
            case 5 where matches("sound"): self = .sound
            case 5 where matches("badge"): self = .badge
            case 8 where matches("subtitle"): self = .subtitle
            case 12 where matches("click_action"): self = .clickAction
            case 12 where matches("body_loc_key"): self = .bodyLocKey
            case 13 where matches("title_loc_key"): self = .titleLocKey
            case 13 where matches("body_loc_args"): self = .other
            case 14 where matches("title_loc_args"): self = .other
            default: return nil
            }
        }
    }

    var title: Range<Int>?
    var subtitle: Range<Int>?
    var body: Range<Int>?
    var titleLocKey: Range<Int>?
    var bodyLocKey: Range<Int>?
    var sound: Range<Int>?
    var clickAction: Range<Int>?
    var badge: Badge?

    /// `aps.badge`: a number, or the string as sent when it is not one.
    enum Badge {
        case number(Int64)
        case string(Range<Int>)
    }

    /// Records `value` for `key`; false for `badge` and `other` (not strings kept as they are).
    mutating func set(_ key: Key, _ value: Range<Int>) -> Bool {
        switch key {
        case .title: title = value
        case .subtitle: subtitle = value
        case .body: body = value
        case .titleLocKey: titleLocKey = value
        case .bodyLocKey: bodyLocKey = value
        case .sound: sound = value
        case .clickAction: clickAction = value
        case .badge, .other: return false
        }
        return true
    }

    var hasAlert: Bool { title != nil || subtitle != nil || body != nil || titleLocKey != nil || bodyLocKey != nil }
}

/// What the scan of a JSON body hands ``FCMSendFields/makeRequest(encoding:)`` instead of parsed objects.
struct FCMScannedPayload {
    /// Where `data` and `notification` are in the body (``FCMEnvelopeMembers/source``; their `{` to their `}`).
    var data: Range<Int>?
    var notification: Range<Int>?
    /// The ``FCMPayloadSize`` of the two.
    var payloadSize: Int
    /// The envelope's members.
    var envelopeMembers: FCMEnvelopeMembers
}

/// A send's `data` or `notification` object: parsed, or — from ``FCMSendScan`` — the body's bytes of it, parsed when
/// it is read (the send path never reads it: the scan wrote the envelope already). Equal by the object.
struct FCMPayloadObject: Sendable, Hashable {
    private enum Storage: Sendable {
        case parsed(JSONObject)
        case source([UInt8], Range<Int>)
    }

    private let storage: Storage

    init(_ object: JSONObject) { storage = .parsed(object) }

    init(source: [UInt8], range: Range<Int>) { storage = .source(source, range) }

    /// The object.
    var object: JSONObject {
        switch storage {
        case .parsed(let object):
            return object
        case .source(let bytes, let range):
            // The scan read these bytes as an object that the full parser accepts (JSONScanner's contract), within
            // the caller's limits: none apply again.
            let unbounded = JSONParseLimits(maxDepth: .max, maxBytes: .max)
            guard case .object(let object)? = try? JSONValue.parse(Array(bytes[range]), limits: unbounded) else {
                assertionFailure("the scanned object does not parse")
                return JSONObject()
            }
            return object
        }
    }

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.object == rhs.object }

    func hash(into hasher: inout Hasher) { hasher.combine(object) }
}

/// The envelope's members as ``FCMSendScan`` read them (``EnvelopeBuilder/append(scanned:)`` writes them), and the
/// two request fields they were read with (``Envelope/init(request:senderID:)`` uses them only while the request
/// still has those).
struct FCMEnvelopeMembers: Sendable {
    /// The body, which the `aps` strings are in.
    var source: [UInt8]
    var aps: APSRanges
    /// `,"gcm.notification.<key>":"<value>"` for the other `notification` keys, in order.
    var notification: [UInt8]
    /// `,"<key>":"<value>"` for the `data` keys, in order.
    var data: [UInt8]
    var contentAvailable: Bool
    var mutableContent: Bool
}

/// Where a request keeps its ``FCMEnvelopeMembers``: a cache of what its envelope would be, not part of its value
/// (any two are equal, whether they hold members or not).
struct FCMEnvelopeCache: Sendable, Hashable {
    var members: FCMEnvelopeMembers?

    static func == (lhs: Self, rhs: Self) -> Bool { true }

    func hash(into hasher: inout Hasher) {}
}

extension UnsafeBufferPointer<UInt8> {
    /// Whether these bytes are `literal`'s UTF-8.
    func equals(_ literal: StaticString) -> Bool {
        literal.withUTF8Buffer { expected in
            guard count == expected.count else { return false }
            for index in 0..<count where self[index] != expected[index] { return false }
            return true
        }
    }

    /// Whether these bytes start with `literal`'s UTF-8.
    func starts(with literal: StaticString) -> Bool {
        literal.withUTF8Buffer { expected in
            guard count >= expected.count else { return false }
            for index in 0..<expected.count where self[index] != expected[index] { return false }
            return true
        }
    }
}
