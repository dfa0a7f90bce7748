import PushRelayCore
import PushRelayWire
import Testing

/// The FCM HTTP v1 `Message`: parsing as Google refuses, and the mapping onto the legacy request and envelope.
@Suite struct FCMv1MessageTests {
    static let token = Fixture.token
    static let sender = SenderID(19_283_323_559)
    static let now: Int64 = 1_700_000_000

    static func parse(_ json: String) throws(FCMv1Error) -> FCMv1Message {
        try FCMv1Message.parse(json: Array(json.utf8))
    }

    static func error(_ json: String) -> FCMv1Error? {
        do {
            _ = try parse(json).legacyRequest(nowSeconds: now)
            return nil
        } catch {
            return error
        }
    }

    static func envelope(_ json: String) throws -> JSONValue {
        let request = try parse(json).legacyRequest(nowSeconds: now)
        return try JSONValue.parse(Envelope(request: request, senderID: sender).rendered(messageID: MessageID(7)))
    }

    @Test func theScenarioMapsOntoTheLegacyEnvelope() throws {
        let order = #"{\"infoReason\":\"Status de pedido\",\"orderID\":3}"#
        let envelope = try Self.envelope("""
            {"message": {"token": "\(Self.token)",
              "notification": {"title": "Provedor de Mensagens", "body": "Status do pedido"},
              "data": {"orderInfo": "\(order)"},
              "apns": {"headers": {"apns-priority": "10"}, "payload": {"aps": {"content-available": 1}}}}}
            """)
        #expect(envelope["gcm.message_id"] == "7")
        #expect(envelope["google.c.sender.id"] == "19283323559")
        #expect(envelope["aps"] == ["alert": ["title": "Provedor de Mensagens", "body": "Status do pedido"], "content-available": 1])
        #expect(envelope["orderInfo"] == #"{"infoReason":"Status de pedido","orderID":3}"#)
        #expect(envelope["from"] == "19283323559")
    }

    @Test func exactlyOneTarget() {
        #expect(Self.error(#"{"message": {"data": {"a": "b"}}}"#)?.message.hasPrefix("Recipient of the message is not set") == true)
        let two = Self.error(#"{"message": {"token": "\#(Self.token)", "condition": "'a' in topics"}}"#)
        #expect(two?.message == "Invalid value at 'message' (oneof), oneof field 'target' is already set. Cannot set 'condition'")
        #expect(two?.httpStatus == 400 && two?.status == "INVALID_ARGUMENT")
        #expect(Self.error(#"{"message": {"token": "nope"}}"#)?.errorCode == "INVALID_ARGUMENT")
        #expect(Self.error(#"{"message": {"topic": "bad name"}}"#)?.fieldViolations.first?.field == "message.topic")
        #expect(Self.error(#"{"message": {"topic": "/topics/news"}}"#) == nil)
    }

    @Test func unknownFieldsAndWrongTypesAreRefusedAsGoogleDoes() {
        let unknown = Self.error(#"{"message": {"token": "\#(Self.token)", "android": {"ttl": "1s", "colour": "x"}}}"#)
        #expect(unknown?.message == #"Invalid JSON payload received. Unknown name "colour" at 'message.android': Cannot find field."#)
        #expect(unknown?.fieldViolations.first?.field == "message.android")
        #expect(unknown?.errorCode == nil)
        #expect(Self.error(#"{"msg": {}}"#)?.message == #"Invalid JSON payload received. Unknown name "msg": Cannot find field."#)
        let number = Self.error(#"{"message": {"token": "\#(Self.token)", "data": {"a": "b", "n": 3}}}"#)
        #expect(number?.message == "Invalid value at 'message.data[1].value' (TYPE_STRING), 3")
        #expect(Self.error(#"{"message": {"token": "\#(Self.token)", "android": {"priority": "URGENT"}}}"#) != nil)
        #expect(Self.error(#"{"message": {"token": "\#(Self.token)", "android": {"ttl": "10"}}}"#)?.message.contains("Illegal duration") == true)
        #expect(Self.error(#"{"message": {"token": "\#(Self.token)"}, "validate_only": "yes"}"#) != nil)
        #expect(Self.error("not json")?.status == "INVALID_ARGUMENT")
        // A field given twice (the same name, or snake and camel case) is refused, not "last one wins".
        let twice = Self.error(#"{"message": {"token": "\#(Self.token)", "data": {"a": "1"}, "data": {"b": "2"}}}"#)
        #expect(twice?.status == "INVALID_ARGUMENT" && twice?.message.contains(#"Duplicate field "data""#) == true, "\(String(describing: twice))")
        let mapKey = Self.error(#"{"message": {"token": "\#(Self.token)", "data": {"a": "1", "a": "2"}}}"#)
        #expect(mapKey?.message.contains(#"Duplicate field "a""#) == true, "\(String(describing: mapKey))")
        let cases = Self.error(#"{"message": {"token": "\#(Self.token)", "android": {"collapse_key": "x", "collapseKey": "y"}}}"#)
        #expect(cases?.message.contains(#"Duplicate field "collapseKey""#) == true, "\(String(describing: cases))")
        #expect(cases?.fieldViolations.first?.field == "message.android.collapse_key")
    }

    /// A malformed token is counted under the legacy name of its outcome, as v1's `UNREGISTERED` is counted as
    /// `NotRegistered` (docs/operations.md, `pushrelay_sends_rejected_total`): one series covers both APIs.
    @Test func malformedTokenIsCountedAsInvalidRegistration() {
        let malformed = Self.error(#"{"message": {"token": "zzz"}}"#)
        #expect(malformed?.status == "INVALID_ARGUMENT" && malformed?.metricName == "InvalidRegistration")
        #expect(FCMv1Error.from(.invalidRegistration, retryAfterSeconds: 1).metricName == "InvalidRegistration")
        #expect(FCMv1Error.unregistered.metricName == "UNREGISTERED")
        #expect(Self.error(#"{"message": {"topic": "a", "token": "\#(Self.token)"}}"#)?.metricName == "INVALID_ARGUMENT")
    }

    @Test func camelCaseNamesAreAccepted() throws {
        let request = try Self.parse(#"""
            {"validateOnly": true, "message": {"token": "\#(Self.token)", "android": {"collapseKey": "c",
             "restrictedPackageName": "br.com.x", "directBootOk": true, "fcmOptions": {"analyticsLabel": "l"}}}}
            """#).legacyRequest(nowSeconds: Self.now)
        #expect(request.dryRun)
        #expect(request.collapseKey == "c")
        #expect(request.restrictedPackageName == "br.com.x")
    }

    @Test func optionsMapFromAndroidApnsAndWebpush() throws {
        let request = try Self.parse(#"""
            {"message": {"token": "\#(Self.token)", "android": {"ttl": "3.5s", "priority": "NORMAL", "collapse_key": "a"},
             "apns": {"headers": {"apns-collapse-id": "b"}}}}
            """#).legacyRequest(nowSeconds: Self.now)
        #expect(request.timeToLive == 4)
        #expect(request.priority == .normal)
        #expect(request.collapseKey == "b")
        let apns = try Self.parse(#"""
            {"message": {"token": "\#(Self.token)", "android": {"ttl": "60s", "priority": "NORMAL"},
             "apns": {"headers": {"apns-expiration": "\#(Self.now + 100)", "apns-priority": "10"}}}}
            """#).legacyRequest(nowSeconds: Self.now)
        #expect(apns.timeToLive == 100)
        #expect(apns.priority == .high)
        let zero = try Self.parse(#"{"message": {"token": "\#(Self.token)", "apns": {"headers": {"apns-expiration": "0"}}}}"#)
            .legacyRequest(nowSeconds: Self.now)
        #expect(zero.timeToLive == 0)
        let web = try Self.parse(#"{"message": {"token": "\#(Self.token)", "webpush": {"headers": {"TTL": "30", "Urgency": "high", "Topic": "t"}}}}"#)
            .legacyRequest(nowSeconds: Self.now)
        #expect(web.timeToLive == 30 && web.priority == .high && web.collapseKey == "t")
        // Header names in any case (they are case-insensitive): lower-case Web Push headers, a capitalised APNs one.
        let lower = try Self.parse(#"{"message": {"token": "\#(Self.token)", "webpush": {"headers": {"ttl": "0", "urgency": "high", "topic": "zz"}}}}"#)
            .legacyRequest(nowSeconds: Self.now)
        #expect(lower.timeToLive == 0 && lower.priority == .high && lower.collapseKey == "zz")
        let capital = try Self.parse(#"{"message": {"token": "\#(Self.token)", "apns": {"headers": {"Apns-Priority": "10", "APNS-Collapse-Id": "c"}}}}"#)
            .legacyRequest(nowSeconds: Self.now)
        #expect(capital.priority == .high && capital.collapseKey == "c")
        // content-available and mutable-content as JSON booleans, as some senders write them: set, not dropped.
        let flags = try Self.parse(#"{"message": {"token": "\#(Self.token)", "apns": {"payload": {"aps": {"content-available": true, "mutable-content": true}}}}}"#)
            .legacyRequest(nowSeconds: Self.now)
        #expect(flags.contentAvailable && flags.mutableContent)
        let none = try Self.parse(#"{"message": {"token": "\#(Self.token)"}}"#).legacyRequest(nowSeconds: Self.now)
        #expect(none.timeToLive == FCMLimits.defaultTimeToLive && none.priority == nil)
        #expect(Self.error(#"{"message": {"token": "\#(Self.token)", "android": {"ttl": "2419201s"}}}"#)?.errorCode == "INVALID_ARGUMENT")
        // A negative duration is a well-formed proto3 duration: the answer names the range, not the format.
        for ttl in ["-5s", "-0.5s"] {
            let negative = Self.error(#"{"message": {"token": "\#(Self.token)", "android": {"ttl": "\#(ttl)"}}}"#)
            #expect(negative?.message.contains("outside 0 to 2419200 seconds") == true, "\(String(describing: negative))")
        }
        #expect(Self.error(#"{"message": {"token": "\#(Self.token)", "android": {"ttl": "-s"}}}"#)?.message.contains("Illegal duration format") == true)
        // proto3: an empty string is the field's default, not a value: no collapse, no restriction, and an empty
        // APNs collapse id leaves the Android one in force.
        let empty = try Self.parse(#"""
            {"message": {"token": "\#(Self.token)", "android": {"collapse_key": "", "restricted_package_name": ""},
             "apns": {"headers": {"apns-collapse-id": ""}}, "webpush": {"headers": {"Topic": ""}}}}
            """#).legacyRequest(nowSeconds: Self.now)
        #expect(empty.collapseKey == nil && empty.restrictedPackageName == nil)
        let fallback = try Self.parse(#"""
            {"message": {"token": "\#(Self.token)", "android": {"collapse_key": "a"}, "apns": {"headers": {"apns-collapse-id": ""}}}}
            """#).legacyRequest(nowSeconds: Self.now)
        #expect(fallback.collapseKey == "a")
    }

    @Test func apnsPayloadOverridesAndExtrasReachTheEnvelope() throws {
        let envelope = try Self.envelope(#"""
            {"message": {"token": "\#(Self.token)", "notification": {"title": "T", "body": "B", "image": "https://i"},
             "apns": {"payload": {"aps": {"alert": {"body": "APNs body", "launch-image": "l.png"}, "badge": 3,
               "sound": "ping.caf", "category": "ORDER", "mutable-content": 1, "thread-id": "orders"},
               "orderInfo": {"orderID": 3}}},
             "android": {"notification": {"channel_id": "orders", "color": "#ff0000", "title": "ignored"}},
             "data": {"k": "v"}}}
            """#)
        let aps = try #require(envelope["aps"])
        #expect(aps["alert"] == ["title": "T", "body": "APNs body", "launch-image": "l.png"])
        #expect(aps["badge"] == 3)
        #expect(aps["sound"] == "ping.caf")
        #expect(aps["category"] == "ORDER")
        #expect(aps["mutable-content"] == 1)
        #expect(aps["thread-id"] == "orders")
        #expect(envelope["gcm.notification.image"] == "https://i")
        #expect(envelope["gcm.notification.android_channel_id"] == "orders")
        #expect(envelope["gcm.notification.color"] == "#ff0000")
        #expect(envelope["k"] == "v")
        #expect(envelope["orderInfo"] == ["orderID": 3])
    }

    @Test func dataFromAndroidAndWebpushFillsInAndReservedKeysAreRefused() throws {
        let request = try Self.parse(#"""
            {"message": {"token": "\#(Self.token)", "data": {"a": "1"}, "android": {"data": {"a": "2", "b": "2"}},
             "webpush": {"data": {"c": "3"}}}}
            """#).legacyRequest(nowSeconds: Self.now)
        #expect(request.data.map(JSONValue.object) == ["a": "1", "b": "2", "c": "3"])
        #expect(Self.error(#"{"message": {"token": "\#(Self.token)", "data": {"google.x": "1"}}}"#)?.errorCode == "INVALID_ARGUMENT")
        #expect(Self.error(#"{"message": {"token": "\#(Self.token)", "android": {"data": {"from": "1"}}}}"#) != nil)
        #expect(Self.error(#"{"message": {"token": "\#(Self.token)", "apns": {"payload": {"gcm.x": 1}}}}"#) != nil)
    }

    @Test func payloadLimitIs4096Bytes() throws {
        let fits = #"{"message": {"token": "\#(Self.token)", "data": {"k": "\#(String(repeating: "v", count: 4095))"}}}"#
        #expect(try Self.parse(fits).legacyRequest(nowSeconds: Self.now).payloadSize == 4096)
        let over = #"{"message": {"token": "\#(Self.token)", "data": {"k": "\#(String(repeating: "v", count: 4096))"}}}"#
        #expect(Self.error(over)?.message.contains("too big") == true)
        let apns = #"{"message": {"token": "\#(Self.token)", "apns": {"payload": {"x": "\#(String(repeating: "v", count: 4096))"}}}}"#
        #expect(Self.error(apns)?.message.contains("too big") == true)
    }

    @Test func topicAndConditionTargets() throws {
        let topic = try Self.parse(#"{"message": {"topic": "news"}}"#).legacyRequest(nowSeconds: Self.now)
        #expect(topic.addressing == .topic(TopicName("/topics/news")!))
        let condition = try Self.parse(#"{"message": {"condition": "'a' in topics && 'b' in topics"}}"#)
            .legacyRequest(nowSeconds: Self.now)
        guard case .condition(let parsed) = condition.addressing else { Issue.record("not a condition"); return }
        #expect(parsed.text == "'a' in topics && 'b' in topics")
    }

    @Test func errorBodiesAreGoogleRPCStatus() throws {
        let body = try JSONValue.parse(FCMv1Error.unregistered.body)
        #expect(body == [
            "error": [
                "code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND",
                "details": [["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"]],
            ],
        ])
        #expect(FCMv1Error.from(.mismatchSenderId, retryAfterSeconds: 1).httpStatus == 403)
        #expect(FCMv1Error.from(.deviceMessageRateExceeded, retryAfterSeconds: 5) == .quotaExceeded("Too many messages for this device.", retryAfterSeconds: 5))
        #expect(FCMv1Error.from(.unavailable, retryAfterSeconds: 10).httpStatus == 503)
        #expect(FCMv1Error.from(.internalServerError, retryAfterSeconds: 10).errorCode == "INTERNAL")
        #expect(FCMv1Error.from(FCMError(code: .invalidApnsCredential), retryAfterSeconds: 10).errorCode == "THIRD_PARTY_AUTH_ERROR")
        #expect(FCMv1Error.unauthenticated.errorCode == nil && FCMv1Error.unauthenticated.httpStatus == 401)
        #expect(FCMv1Error.unimplemented(method: "POST", path: "/v1/projects/x/y").httpStatus == 501)
    }
}
