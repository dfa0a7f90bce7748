import PushRelayCore
import PushRelayWire
import Testing

@Suite("FCM send request (form-encoded plain text)")
struct FCMFormRequestTests {
    let token = Fixture.token

    private func form(_ text: String) throws(FCMError) -> FCMSendRequest {
        try FCMSendRequest.parse(form: Array(text.utf8))
    }

    @Test func pythonGCMPlaintextPayload() throws {
        let request = try form(
            "registration_id=\(token)&collapse_key=score&time_to_live=60&dry_run=1&delay_while_idle=0"
                + "&data.message=Hello+World%21&data.n=3&data.utf=%C3%A9"
        )
        #expect(request.encoding == .form)
        #expect(request.recipients == [FCMRecipient(token: token)])
        #expect(request.collapseKey == "score")
        #expect(request.timeToLive == 60)
        #expect(request.dryRun)
        #expect(!request.delayWhileIdle)
        #expect(request.data?.keys == ["message", "n", "utf"])
        #expect(request.data?["message"] == "Hello World!")
        #expect(request.data?["n"] == "3")
        #expect(request.data?["utf"] == "é")
    }

    @Test func pythonBooleansInFormBodies() throws {
        for (text, value) in [("True", true), ("TRUE", true), ("true", true), ("1", true), ("False", false),
                              ("FALSE", false), ("0", false)] {
            let request = try FCMSendRequest.parse(form: Array("registration_id=\(Fixture.token)&dry_run=\(text)&delay_while_idle=\(text)".utf8))
            #expect(request.dryRun == value, "\(text)")
            #expect(request.delayWhileIdle == value, "\(text)")
        }
        #expect(Fixture.formError("registration_id=\(Fixture.token)&dry_run=yes") != nil)
    }

    @Test func notificationAndOptions() throws {
        let request = try form(
            "to=\(token)&notification.title=T&notification.body=B&priority=high&content_available=true"
                + "&mutable_content=1&restricted_package_name=com.x"
        )
        #expect(request.notification?.keys == ["title", "body"])
        #expect(request.priority == .high)
        #expect(request.contentAvailable && request.mutableContent)
        #expect(request.restrictedPackageName == "com.x")
    }

    @Test func missingRegistration() throws {
        #expect(try form("data.a=b").recipients == [FCMRecipient(token: "", error: .missingRegistration)])
        #expect(try form("registration_id=&data.a=b").recipients.first?.error == .missingRegistration)
        #expect(try form("").recipients.first?.error == .missingRegistration)
    }

    @Test func invalidRegistration() throws {
        #expect(try form("registration_id=nope").recipients.first?.error == .invalidRegistration)
    }

    @Test func messageErrors() throws {
        #expect(try form("registration_id=\(token)&data.from=x").messageError == .invalidDataKey)
        #expect(try form("registration_id=\(token)&time_to_live=abc").messageError == .invalidTtl)
        #expect(try form("registration_id=\(token)&time_to_live=2419201").messageError == .invalidTtl)
        let big = "registration_id=\(token)&data.k=" + String(repeating: "v", count: 4096)
        #expect(try form(big).messageError == .messageTooBig)
    }

    @Test func topic() throws {
        #expect(try form("to=%2Ftopics%2Fnews&data.a=b").addressing == .topic(TopicName("news")!))
    }

    @Test func multicastNeedsJSON() {
        let error = Fixture.formError("registration_id=\(token)&registration_id=\(token)")
        #expect(error == .plainTextMulticast)
        #expect(
            error?.responseBody
                == #"Plain text requests accept one registration_id; use JSON with "registration_ids" for multicast"#
        )
    }

    @Test func malformedForm() {
        for body in ["registration_id=%zz", "data.a=%E", "data.a=%FF"] {
            #expect(Fixture.formError(body)?.responseBody == "Malformed application/x-www-form-urlencoded body")
        }
    }

    @Test func badBoolean() {
        #expect(Fixture.formError("dry_run=maybe")?.responseBody == #"Field "dry_run" must be a JSON boolean: "maybe""#)
    }

    @Test func badPriority() {
        #expect(Fixture.formError("priority=urgent")?.code == .invalidParameters)
    }
}
