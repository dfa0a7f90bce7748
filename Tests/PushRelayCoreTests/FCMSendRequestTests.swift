import PushRelayCore
import PushRelayWire
import Testing

@Suite("FCM send request (JSON)")
struct FCMSendRequestTests {
    let token = Fixture.token

    // MARK: Request-level errors (400), each string

    @Test func invalidJSON() {
        let error = Fixture.requestError("x")
        #expect(error?.code == .badRequest)
        #expect(error?.httpStatus == 400)
        #expect(error?.responseBody == "JSON_PARSING_ERROR: Unexpected character (x) at position 0.")
        #expect(Fixture.requestError("")?.responseBody == "JSON_PARSING_ERROR: Unexpected end of input at position 0.")
    }

    @Test func bodyMustBeAnObject() {
        #expect(Fixture.requestError("[1]")?.responseBody == "Request body must be a JSON object")
    }

    @Test func toMustBeAString() {
        #expect(Fixture.requestError(#"{"to": 5}"#)?.responseBody == #"Field "to" must be a JSON string: 5"#)
        #expect(Fixture.requestError(#"{"to": ["a"]}"#)?.responseBody == #"Field "to" must be a JSON string: ["a"]"#)
    }

    @Test func fieldTypes() {
        let cases: [(String, String)] = [
            (#"{"condition": 1}"#, #"Field "condition" must be a JSON string: 1"#),
            (#"{"collapse_key": true}"#, #"Field "collapse_key" must be a JSON string: true"#),
            (#"{"priority": 10}"#, #"Field "priority" must be a JSON string: 10"#),
            (#"{"restricted_package_name": {}}"#, #"Field "restricted_package_name" must be a JSON string: {}"#),
            (#"{"content_available": "yes"}"#, #"Field "content_available" must be a JSON boolean: "yes""#),
            (#"{"mutable_content": 1}"#, #"Field "mutable_content" must be a JSON boolean: 1"#),
            (#"{"dry_run": "true"}"#, #"Field "dry_run" must be a JSON boolean: "true""#),
            (#"{"delay_while_idle": 0}"#, #"Field "delay_while_idle" must be a JSON boolean: 0"#),
            (#"{"time_to_live": "60"}"#, #"Field "time_to_live" must be a JSON number: "60""#),
            (#"{"data": "x"}"#, #"Field "data" must be a JSON array: "x""#),
            (#"{"data": [1]}"#, #"Field "data" must be a JSON array: [1]"#),
            (#"{"notification": 3}"#, #"Field "notification" must be a JSON array: 3"#),
            (#"{"notification_key": 3}"#, #"Field "notification_key" must be a JSON string: 3"#),
        ]
        for (body, expected) in cases {
            let error = Fixture.requestError(body)
            #expect(error?.code == .badRequest, "\(body)")
            #expect(error?.responseBody == expected, "\(body)")
        }
    }

    @Test func registrationIDsMustBeAnArray() {
        #expect(
            Fixture.requestError(#"{"registration_ids": "abc"}"#)?.responseBody
                == #""registration_ids" field is not a JSON array"#
        )
    }

    @Test func registrationIDsCannotBeEmpty() {
        #expect(
            Fixture.requestError(#"{"registration_ids": []}"#)?.responseBody
                == #""registration_ids" field cannot be empty"#
        )
    }

    @Test func thousandTokensAreAcceptedAndOneMoreIsRefused() throws {
        func body(_ count: Int) -> String {
            let tokens = (0..<count).map { "\"\(Fixture.token($0))\"" }.joined(separator: ",")
            return #"{"registration_ids": [\#(tokens)], "data": {"k": "v"}}"#
        }
        let request = try Fixture.request(body(1000))
        #expect(request.recipients.count == 1000)
        #expect(request.recipients.allSatisfy { $0.error == nil })
        #expect(request.recipients[999].token == Fixture.token(999))
        let error = Fixture.requestError(body(1001))
        #expect(error?.httpStatus == 400)
        #expect(error?.responseBody == "Number of messages on bulk (1001) exceeds maximum allowed (1000)")
    }

    @Test func conflictingTargets() {
        #expect(
            Fixture.requestError(#"{"to": "\#(token)", "registration_ids": ["\#(token)"]}"#)?.responseBody
                == #"Must use either "registration_ids" field or "to", not both"#
        )
        #expect(
            Fixture.requestError(#"{"to": "\#(token)", "condition": "'a' in topics"}"#)?.responseBody
                == #"Must use either "condition" field or "to"/"registration_ids", not both"#
        )
    }

    @Test func unknownPriorityIsInvalidParameters() {
        let error = Fixture.requestError(#"{"to": "\#(token)", "priority": "urgent"}"#)
        #expect(error?.code == .invalidParameters)
        #expect(error?.httpStatus == 400)
        #expect(error?.resultString == #"InvalidParameters: priority must be "normal" or "high""#)
    }

    @Test func prioritiesAndDefaults() throws {
        #expect(try Fixture.request(#"{"to": "\#(token)", "priority": "normal"}"#).priority == .normal)
        #expect(try Fixture.request(#"{"to": "\#(token)", "priority": "10"}"#).priority == .high)
        #expect(try Fixture.request(#"{"to": "\#(token)", "priority": "5"}"#).priority == .normal)
        #expect(try Fixture.request(#"{"to": "\#(token)", "data": {"a": "b"}}"#).effectivePriority == .normal)
        #expect(try Fixture.request(#"{"to": "\#(token)", "notification": {"title": "t"}}"#).effectivePriority == .high)
    }

    @Test func nullFieldsAreAbsentAndUnknownFieldsIgnored() throws {
        let request = try Fixture.request(
            #"{"to": "\#(token)", "collapse_key": null, "time_to_live": null, "whatever": [1], "data": null}"#
        )
        #expect(request.collapseKey == nil)
        #expect(request.timeToLive == FCMLimits.defaultTimeToLive)
        #expect(request.data == nil)
        #expect(request.messageError == nil)
    }

    @Test func allOptionsAreRead() throws {
        let request = try Fixture.request(
            #"""
            {"to": "\#(token)", "collapse_key": "score", "priority": "high", "content_available": true,
             "mutable_content": true, "time_to_live": 60, "dry_run": true, "restricted_package_name": "com.x",
             "delay_while_idle": true, "data": {"a": "1", "n": 2}, "notification": {"title": "T", "x": {"y": 1}}}
            """#
        )
        #expect(request.collapseKey == "score")
        #expect(request.contentAvailable && request.mutableContent && request.dryRun && request.delayWhileIdle)
        #expect(request.timeToLive == 60)
        #expect(request.restrictedPackageName == "com.x")
        #expect(request.data?.keys == ["a", "n"])
        #expect(request.data?["n"] == 2)
        #expect(request.notification?["x"] == ["y": 1])
        #expect(request.isTokenSend)
    }

    @Test func emptyCollapseKeyAndPackageNameAreNoValue() throws {
        // `""` would otherwise collapse every message of the device into one, or match no app at all.
        let request = try Fixture.request(#"{"to": "\#(token)", "collapse_key": "", "restricted_package_name": ""}"#)
        #expect(request.collapseKey == nil)
        #expect(request.restrictedPackageName == nil)
        let form = try FCMSendRequest.parse(form: Array("registration_id=\(token)&collapse_key=&restricted_package_name=".utf8))
        #expect(form.collapseKey == nil)
        #expect(form.restrictedPackageName == nil)
    }

    // MARK: Per-target errors (200 results)

    @Test func missingRegistration() throws {
        for body in [#"{"data": {"a": "b"}}"#, #"{"to": ""}"#, #"{"to": null}"#] {
            let request = try Fixture.request(body)
            #expect(request.recipients == [FCMRecipient(token: "", error: .missingRegistration)], "\(body)")
        }
        let multicast = try Fixture.request(#"{"registration_ids": ["", "\#(token)"]}"#)
        #expect(multicast.recipients.map(\.error) == [.missingRegistration, nil])
    }

    @Test func invalidRegistration() throws {
        let request = try Fixture.request(
            #"{"registration_ids": ["\#(token)", "garbage", 42, "\#(token) ", "\#(token.dropLast(120))"]}"#
        )
        #expect(request.recipients.map(\.error) == [nil, .invalidRegistration, .invalidRegistration,
                                                    .invalidRegistration, .invalidRegistration])
        #expect(request.recipients[2].token == "42")
    }

    @Test(arguments: ["from", "message_type", "google", "google.c.a.e", "googleX", "gcm", "gcm.notification.x"])
    func invalidDataKey(key: String) throws {
        let request = try Fixture.request(#"{"registration_ids": ["\#(token)", "bad"], "data": {"\#(key)": "x"}}"#)
        #expect(request.messageError == .invalidDataKey)
        #expect(request.recipients.map(\.error) == [.invalidDataKey, .invalidRegistration])
    }

    @Test(arguments: ["From", "fromage", "messagetype", "Google", "xgcm", "collapse_key"])
    func allowedDataKeys(key: String) throws {
        #expect(try Fixture.request(#"{"to": "\#(token)", "data": {"\#(key)": "x"}}"#).messageError == nil)
    }

    @Test func timeToLiveRange() throws {
        for (ttl, valid) in [("0", true), ("2419200", true), ("60", true), ("-1", false), ("2419201", false),
                             ("1.5", false), ("99999999999999999999", false)] {
            let request = try Fixture.request(#"{"to": "\#(token)", "time_to_live": \#(ttl)}"#)
            #expect((request.messageError == nil) == valid, "ttl \(ttl)")
            if !valid {
                #expect(request.messageError == .invalidTtl)
                #expect(request.recipients.first?.error == .invalidTtl)
            }
        }
        #expect(try Fixture.request(#"{"to": "\#(token)", "time_to_live": 0}"#).timeToLive == 0)
    }

    @Test func payloadOf4096BytesIsAcceptedAnd4097Refused() throws {
        let ok = try Fixture.request(#"{"to": "\#(token)", "data": {"k": "\#(String(repeating: "v", count: 4095))"}}"#)
        #expect(ok.payloadSize == 4096)
        #expect(ok.messageError == nil)
        let big = try Fixture.request(#"{"to": "\#(token)", "data": {"k": "\#(String(repeating: "v", count: 4096))"}}"#)
        #expect(big.payloadSize == 4097)
        #expect(big.messageError == .messageTooBig)
        #expect(big.recipients.first?.error == .messageTooBig)
    }

    @Test func payloadSizeRule() throws {
        // Keys + values of data and notification; strings unescaped, other values as compact JSON.
        let request = try Fixture.request(
            #"{"to": "\#(token)", "data": {"ab": "c\"d", "n": 12, "t": true, "o": {"x": [1, 2]}},"#
                + #" "notification": {"title": "é"}}"#
        )
        // ab(2)+c"d(3) + n(1)+12(2) + t(1)+true(4) + o(1)+{"x":[1,2]}(11) + title(5)+é(2)
        #expect(request.payloadSize == 5 + 3 + 5 + 12 + 7)
        #expect(FCMPayloadSize.of(data: nil, notification: nil) == 0)
    }

    @Test func errorPrecedence() throws {
        let request = try Fixture.request(
            #"{"to": "\#(token)", "time_to_live": -5, "data": {"from": "\#(String(repeating: "v", count: 5000))"}}"#
        )
        #expect(request.messageError == .invalidDataKey)
        let ttlAndSize = try Fixture.request(
            #"{"to": "\#(token)", "time_to_live": -5, "data": {"k": "\#(String(repeating: "v", count: 5000))"}}"#
        )
        #expect(ttlAndSize.messageError == .invalidTtl)
    }

    // MARK: Topics and conditions

    @Test func topicSend() throws {
        let request = try Fixture.request(#"{"to": "/topics/news.sport_1-x~y%20", "data": {"a": "b"}}"#)
        #expect(request.addressing == .topic(TopicName("news.sport_1-x~y%20")!))
        #expect(!request.isTokenSend)
        #expect(request.recipients.isEmpty)
    }

    @Test func invalidTopicIsInvalidParameters() {
        for to in ["/topics/", "/topics/a b", "/topics/a/b", "/topics/" + String(repeating: "a", count: 901)] {
            let error = Fixture.requestError(#"{"to": "\#(to)"}"#)
            #expect(error?.code == .invalidParameters, "\(to)")
            #expect(error?.resultString.hasPrefix("InvalidParameters: Invalid topic name") == true)
        }
    }

    @Test func conditionSend() throws {
        let request = try Fixture.request(
            #"{"condition": "'a' in topics && ('b' in topics || 'c' in topics)", "data": {"k": "v"}}"#
        )
        guard case .condition(let condition) = request.addressing else {
            Issue.record("not a condition send")
            return
        }
        #expect(condition.topics == ["a", "b", "c"])
    }

    @Test func malformedConditionIsInvalidParameters() {
        let error = Fixture.requestError(#"{"condition": "'a' in topics &&"}"#)
        #expect(error?.code == .invalidParameters)
        #expect(error?.httpStatus == 400)
        #expect(
            error?.resultString
                == "InvalidParameters: Invalid condition: expected a quoted topic name, found end of condition at position 16"
        )
    }

    @Test func topicMessageErrorsApplyToo() throws {
        let request = try Fixture.request(#"{"to": "/topics/a", "data": {"from": "x"}}"#)
        #expect(request.messageError == .invalidDataKey)
        let big = try Fixture.request(#"{"to": "/topics/a", "data": {"k": "\#(String(repeating: "v", count: 4096))"}}"#)
        #expect(big.messageError == .messageTooBig)
    }

    // MARK: Content type dispatch

    @Test func encodingRule() {
        let json = Array(" \n{}".utf8), form = Array("to=x".utf8)
        let cases: [(String?, [UInt8]?, FCMSendRequest.Encoding)] = [
            ("application/json", form, .json), ("Application/JSON; charset=UTF-8", form, .json),
            (" application/json ;charset=utf-8", form, .json), ("application/jsonx", json, .form),
            ("application/json-seq", json, .form), ("text/plain", json, .form),
            ("application/x-www-form-urlencoded", json, .form), (nil, json, .json), (nil, form, .form),
            (nil, [], .form), (nil, nil, .form),
        ]
        for (contentType, body, expected) in cases {
            #expect(FCMSendRequest.Encoding(contentType: contentType, body: body) == expected, "\(contentType ?? "nil")")
        }
    }

    @Test func dispatchByContentType() throws {
        let json = Array(#"{"to": "\#(token)"}"#.utf8)
        #expect(try FCMSendRequest.parse(body: json, contentType: "application/json").encoding == .json)
        #expect(try FCMSendRequest.parse(body: json, contentType: "Application/JSON; charset=UTF-8").encoding == .json)
        #expect(try FCMSendRequest.parse(body: json, contentType: nil).encoding == .json)
        let form = Array("registration_id=\(token)".utf8)
        #expect(
            try FCMSendRequest.parse(body: form, contentType: "application/x-www-form-urlencoded;charset=UTF-8")
                .encoding == .form
        )
        #expect(try FCMSendRequest.parse(body: form, contentType: nil).recipients.first?.token == token)
    }
}
