import PushRelayCore
import PushRelayWire
import Testing

/// FCM's device groups in the core: the notification key's shape (never a token's), the `/fcm/notification`
/// request's validation and its `{"error": …}` texts, and the group form of a send's answer.
@Suite("Device groups (core)")
struct DeviceGroupTests {
    static let key = NotificationKey.marker + String(repeating: "k", count: NotificationKey.randomLength)

    static func operation(_ json: String) throws(FCMDeviceGroupError) -> FCMDeviceGroupOperation {
        try FCMDeviceGroupOperation.parse(json: Array(json.utf8))
    }

    static func error(_ json: String) -> FCMDeviceGroupError? {
        do {
            _ = try operation(json)
            return nil
        } catch {
            return error
        }
    }

    // MARK: The notification key

    @Test("generated keys are well formed, 119 characters, and never registration tokens (nor tokens keys)")
    func keysAndTokensAreDisjoint() {
        for _ in 0..<200 {
            let key = NotificationKey.generate().rawValue
            #expect(key.utf8.count == 119 && key.hasPrefix("APA91b"))
            #expect(NotificationKey.isWellFormed(key))
            #expect(!RegistrationToken.isWellFormed(key))
            let token = RegistrationToken.generate().rawValue
            #expect(!NotificationKey.isWellFormed(token))
        }
    }

    @Test("the key format: APA91b, then 22…4090 base64url characters")
    func keyFormat() {
        #expect(NotificationKey.isWellFormed("APA91b" + String(repeating: "a", count: 22)))
        #expect(!NotificationKey.isWellFormed("APA91b" + String(repeating: "a", count: 21)))
        #expect(NotificationKey.isWellFormed("APA91b" + String(repeating: "-", count: 4090)))
        #expect(!NotificationKey.isWellFormed("APA91b" + String(repeating: "_", count: 4091)))
        #expect(!NotificationKey.isWellFormed("APA91c" + String(repeating: "a", count: 30)))
        #expect(!NotificationKey.isWellFormed("APA91b" + String(repeating: "a", count: 30) + ":x"))
        #expect(!NotificationKey.isWellFormed("APA91b" + String(repeating: "a", count: 30) + "="))
        #expect(NotificationKey("/topics/news") == nil)
        var a = FakeRandomNumberGenerator(state: 7)
        var b = FakeRandomNumberGenerator(state: 7)
        #expect(NotificationKey.generate(using: &a) == NotificationKey.generate(using: &b))
    }

    // MARK: A send to a group

    @Test("to (or the deprecated notification_key) with a key addresses the group; its message errors are kept")
    func sendToAKeyAddressesTheGroup() throws {
        let key = try #require(NotificationKey(Self.key))
        let send = try Fixture.request(#"{"to": "\#(Self.key)", "data": {"k": "v"}}"#)
        #expect(send.addressing == .deviceGroup(key))
        #expect(send.recipients.isEmpty && !send.isTokenSend && send.messageError == nil)
        #expect(try Fixture.request(#"{"notification_key": "\#(Self.key)"}"#).addressing == .deviceGroup(key))
        #expect(try Fixture.request(#"{"to": "\#(Self.key)", "time_to_live": -1}"#).messageError == .invalidTtl)
        #expect(try Fixture.request(#"{"to": "\#(Self.key)", "data": {"from": "x"}}"#).messageError == .invalidDataKey)
        // A token is still a token, and a key in registration_ids is no token.
        #expect(try Fixture.request(#"{"to": "\#(Fixture.token)"}"#).isTokenSend)
        let list = try Fixture.request(#"{"registration_ids": ["\#(Self.key)"]}"#)
        #expect(list.recipients.first?.error == .invalidRegistration)
        // Plain text names one token; a key there is no token.
        let form = try FCMSendRequest.parse(form: Array("registration_id=\(Self.key)".utf8))
        #expect(form.recipients.first?.error == .invalidRegistration)
    }

    @Test("FCM HTTP v1: a key in message.token addresses the group; a text of neither shape is refused")
    func v1TokenMayBeAKey() throws {
        let message = try FCMv1Message.parse(json: Array(#"{"message": {"token": "\#(Self.key)", "data": {"k": "v"}}}"#.utf8))
        #expect(try message.legacyRequest(nowSeconds: 0).addressing == .deviceGroup(try #require(NotificationKey(Self.key))))
        let token = try FCMv1Message.parse(json: Array(#"{"message": {"token": "\#(Fixture.token)"}}"#.utf8))
        #expect(try token.legacyRequest(nowSeconds: 0).isTokenSend)
        #expect(throws: FCMv1Error.invalidRegistrationToken) {
            try FCMv1Message.parse(json: Array(#"{"message": {"token": "APA91bshort"}}"#.utf8))
        }
    }

    @Test("the group answer: success and failure, failed_registration_ids only when something failed")
    func groupAnswer() {
        let id = MessageID(1_700_000_000_000_001)
        let all = FCMDeviceGroupResponse(members: [
            .init(token: "a", result: .messageID(id)), .init(token: "b", result: .dryRun),
        ])
        #expect(Fixture.text(all.jsonBody()) == #"{"success":2,"failure":0}"#)
        let some = FCMDeviceGroupResponse(members: [
            .init(token: "a", result: .error(.notRegistered)), .init(token: "b", result: .messageID(id)),
            .init(token: "c\"", result: .error(.deviceMessageRateExceeded)),
        ])
        #expect(some.success == 1 && some.failure == 2)
        #expect(Fixture.text(some.jsonBody()) == #"{"success":1,"failure":2,"failed_registration_ids":["a","c\""]}"#)
    }

    // MARK: /fcm/notification requests

    @Test("create, add and remove parse; repeated tokens count once; unknown fields and nulls are ignored")
    func operationsParse() throws {
        let a = Fixture.token(1), b = Fixture.token(2)
        let create = try Self.operation(
            #"{"operation": "create", "notification_key_name": "appUser-Chris", "registration_ids": ["\#(a)", "\#(b)", "\#(a)"], "x": 1, "notification_key": null}"#)
        #expect(create == FCMDeviceGroupOperation(kind: .create, name: "appUser-Chris", notificationKey: nil, registrationIDs: [a, b]))
        let add = try Self.operation(
            #"{"operation": "add", "notification_key": "\#(Self.key)", "registration_ids": ["\#(b)"]}"#)
        #expect(add == FCMDeviceGroupOperation(kind: .add, name: nil, notificationKey: NotificationKey(Self.key), registrationIDs: [b]))
        let remove = try Self.operation(
            #"{"operation": "remove", "notification_key_name": "u", "notification_key": "\#(Self.key)", "registration_ids": ["\#(a)"]}"#)
        #expect(remove.kind == .remove && remove.name == "u" && remove.registrationIDs == [a])
        // create ignores a notification_key it does not use.
        #expect(try Self.operation(
            #"{"operation": "create", "notification_key_name": "n", "notification_key": 5, "registration_ids": ["\#(a)"]}"#
        ).notificationKey == nil)
    }

    @Test("each malformed request gets its 400 text")
    func malformedRequests() {
        let a = Fixture.token(1)
        let twentyOne = (0..<21).map { "\"\(Fixture.token($0))\"" }.joined(separator: ",")
        let twenty = (0..<20).map { "\"\(Fixture.token($0))\"" }.joined(separator: ",")
        let longName = String(repeating: "n", count: FCMLimits.maxNotificationKeyNameLength + 1)
        let cases: [(String, String)] = [
            ("{nope", "JSON_PARSING_ERROR: Unexpected character (n) at position 1."),
            ("[]", "Request body must be a JSON object"),
            (#"{"registration_ids": ["\#(a)"]}"#, "operation is required"),
            (#"{"operation": "delete", "registration_ids": ["\#(a)"]}"#, #"invalid operation: must be "create", "add" or "remove""#),
            (#"{"operation": 1}"#, #"invalid operation: must be "create", "add" or "remove""#),
            (#"{"operation": "create", "registration_ids": ["\#(a)"]}"#, "notification_key_name is required"),
            (#"{"operation": "create", "notification_key_name": "", "registration_ids": ["\#(a)"]}"#,
             "notification_key_name must be a non-empty string of at most 256 bytes"),
            (#"{"operation": "create", "notification_key_name": "\#(longName)", "registration_ids": ["\#(a)"]}"#,
             "notification_key_name must be a non-empty string of at most 256 bytes"),
            (#"{"operation": "create", "notification_key_name": 7, "registration_ids": ["\#(a)"]}"#,
             "notification_key_name must be a non-empty string of at most 256 bytes"),
            (#"{"operation": "add", "registration_ids": ["\#(a)"]}"#, "notification_key is required"),
            (#"{"operation": "add", "notification_key": 3, "registration_ids": ["\#(a)"]}"#, "notification_key must be a string"),
            (#"{"operation": "add", "notification_key": "\#(a)", "registration_ids": ["\#(a)"]}"#, "notification_key not found"),
            (#"{"operation": "create", "notification_key_name": "n"}"#, "registration_ids is required"),
            (#"{"operation": "create", "notification_key_name": "n", "registration_ids": "\#(a)"}"#,
             #""registration_ids" field is not a JSON array"#),
            (#"{"operation": "create", "notification_key_name": "n", "registration_ids": []}"#,
             #""registration_ids" field cannot be empty"#),
            (#"{"operation": "create", "notification_key_name": "n", "registration_ids": ["x", 5]}"#, "no valid registration ids"),
            (#"{"operation": "create", "notification_key_name": "n", "registration_ids": ["\#(a)", "x"]}"#,
             "registration_ids[1] is not a registration token (InvalidRegistration)"),
            (#"{"operation": "create", "notification_key_name": "n", "registration_ids": [\#(twentyOne)]}"#,
             "too many registration ids: a device group has at most 20 members"),
        ]
        for (body, message) in cases {
            let error = Self.error(body)
            #expect(error?.message == message, "\(body.prefix(120))")
            #expect(error?.httpStatus == 400, "\(body.prefix(120))")
            if let error { #expect(Fixture.text(error.jsonBody()) == (["error": .string(message)] as JSONValue).serializedString()) }
        }
        // Twenty distinct tokens (and repeats of them) are the limit, not past it.
        #expect(Self.error(#"{"operation": "create", "notification_key_name": "n", "registration_ids": [\#(twenty), \#(twenty)]}"#) == nil)
        #expect(FCMDeviceGroupError.unauthenticated.httpStatus == 401)
        #expect(Fixture.text(FCMDeviceGroupError.nameExists.jsonBody()) == #"{"error":"notification_key already exists"}"#)
    }
}
