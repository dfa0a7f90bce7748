import PushRelayCore
import Testing

@Suite("FCM responses and error wire forms")
struct FCMResponseTests {
    @Test func multicastWithErrorsAndCanonicalIDs() {
        let response = FCMSendResponse(
            multicastID: MulticastID(123),
            results: [
                .messageID(MessageID(1_596_000_000_000_001), canonicalRegistrationID: "newtoken"),
                .error(.notRegistered),
                .messageID(MessageID(1_596_000_000_000_002)),
                .error(.invalidParameters("x")),
            ]
        )
        #expect(response.success == 2)
        #expect(response.failure == 2)
        #expect(response.canonicalIDs == 1)
        #expect(
            Fixture.text(response.jsonBody())
                == #"{"multicast_id":123,"success":2,"failure":2,"canonical_ids":1,"results":["#
                + #"{"message_id":"1596000000000001","registration_id":"newtoken"},{"error":"NotRegistered"},"#
                + #"{"message_id":"1596000000000002"},{"error":"InvalidParameters: x"}]}"#
        )
    }

    @Test func dryRun() {
        let response = FCMSendResponse(multicastID: MulticastID(1), results: [.dryRun])
        #expect(
            Fixture.text(response.jsonBody())
                == #"{"multicast_id":1,"success":1,"failure":0,"canonical_ids":0,"results":[{"message_id":"fake_message_id"}]}"#
        )
        #expect(response.plainTextBody() == "id=fake_message_id")
    }

    @Test func plainText() {
        let id = MessageID(1_603_214_613_006_763)
        #expect(FCMSendResponse(multicastID: MulticastID(1), results: [.messageID(id)]).plainTextBody() == "id=1603214613006763")
        #expect(
            FCMSendResponse(multicastID: MulticastID(1), results: [.messageID(id, canonicalRegistrationID: "t2")])
                .plainTextBody() == "id=1603214613006763\nregistration_id=t2"
        )
        #expect(FCMSendResponse(multicastID: MulticastID(1), results: [.error(.missingRegistration)]).plainTextBody()
            == "Error=MissingRegistration")
    }

    @Test func topicResponses() {
        #expect(Fixture.text(FCMTopicResponse.messageID(MessageID(7_146_077_062_196_508)).jsonBody())
            == #"{"message_id":7146077062196508}"#)
        #expect(Fixture.text(FCMTopicResponse.error(.invalidDataKey).jsonBody()) == #"{"error":"InvalidDataKey"}"#)
        #expect(FCMTopicResponse.messageID(MessageID(5)).plainTextBody() == "id=5")
        #expect(FCMTopicResponse.error(.messageTooBig).plainTextBody() == "Error=MessageTooBig")
        #expect(Fixture.text(FCMTopicResponse.dryRun.jsonBody()) == #"{"message_id":-1}"#)
    }

    @Test func everyCodeHasItsWireName() {
        let expected: [(FCMError, String)] = [
            (.missingRegistration, "MissingRegistration"), (.invalidRegistration, "InvalidRegistration"),
            (.notRegistered, "NotRegistered"), (.invalidPackageName, "InvalidPackageName"),
            (.mismatchSenderId, "MismatchSenderId"), (.messageTooBig, "MessageTooBig"),
            (.invalidDataKey, "InvalidDataKey"), (.invalidTtl, "InvalidTtl"), (.unavailable, "Unavailable"),
            (.internalServerError, "InternalServerError"), (.deviceMessageRateExceeded, "DeviceMessageRateExceeded"),
            (.topicsMessageRateExceeded, "TopicsMessageRateExceeded"),
            (FCMError(code: .invalidApnsCredential), "InvalidApnsCredential"),
            (FCMError(code: .invalidParameters), "InvalidParameters"),
        ]
        for (error, name) in expected {
            #expect(error.resultString == name)
            #expect(error.code.wireName == name)
            #expect(!error.isRequestLevel)
        }
        #expect(FCMError.invalidParameters("bad").resultString == "InvalidParameters: bad")
    }

    @Test func httpStatuses() {
        #expect(FCMError.notRegistered.httpStatus == 200)
        #expect(FCMError.invalidParameters("x").httpStatus == 400)
        #expect(FCMError.badRequest("x").httpStatus == 400)
        #expect(FCMError.missingAuthentication.httpStatus == 401)
        #expect(FCMError.unavailable.httpStatus == 503)
        #expect(FCMError.internalServerError.httpStatus == 500)
    }

    @Test func badRequestAnswer() {
        let answer = FCMHTTPAnswer(error: .registrationIDsEmpty, encoding: .json)
        #expect(answer.status == 400)
        #expect(answer.contentType == "text/plain; charset=UTF-8")
        #expect(Fixture.text(answer.body) == #""registration_ids" field cannot be empty"#)
    }

    @Test func invalidParametersAnswer() {
        let json = FCMHTTPAnswer(error: .invalidParameters("Invalid topic name: /topics/"), encoding: .json)
        #expect(json.status == 400)
        #expect(json.contentType == "application/json; charset=UTF-8")
        #expect(Fixture.text(json.body) == #"{"error":"InvalidParameters: Invalid topic name: /topics/"}"#)
        let text = FCMHTTPAnswer(error: .invalidParameters("x"), encoding: .form)
        #expect(Fixture.text(text.body) == "Error=InvalidParameters: x")
    }

    @Test func unauthorizedAnswers() {
        let invalid = FCMHTTPAnswer(error: .invalidAuthentication, encoding: .json)
        #expect(invalid.status == 401)
        #expect(invalid.contentType == "text/html; charset=UTF-8")
        #expect(
            Fixture.text(invalid.body)
                == "<HTML>\n<HEAD>\n<TITLE>Unauthorized</TITLE>\n</HEAD>\n<BODY BGCOLOR=\"#FFFFFF\" TEXT=\"#000000\">\n"
                + "<H1>Unauthorized</H1>\n<H2>Error 401</H2>\n</BODY>\n</HTML>\n"
        )
        let missing = FCMHTTPAnswer(error: .missingAuthentication, encoding: .form)
        #expect(missing.status == 401)
        #expect(Fixture.text(missing.body).contains("The request was missing an Authentication Key (FCM Token)."))
        #expect(missing.reasonPhrase?.hasPrefix("The request was missing an Authentication Key (FCM Token).") == true)
        #expect(invalid.reasonPhrase == nil)
    }

    @Test func unavailableAnswer() {
        let answer = FCMHTTPAnswer(error: .unavailable, encoding: .json, retryAfterSeconds: 1)
        #expect(answer.status == 503)
        #expect(answer.retryAfterSeconds == 1)
        #expect(Fixture.text(answer.body) == "Unavailable")
    }

    @Test func successAnswers() {
        let response = FCMSendResponse(multicastID: MulticastID(9), results: [.messageID(MessageID(10))])
        let json = FCMHTTPAnswer(response, encoding: .json)
        #expect(json.status == 200)
        #expect(json.contentType == "application/json; charset=UTF-8")
        let text = FCMHTTPAnswer(response, encoding: .form)
        #expect(text.contentType == "text/plain; charset=UTF-8")
        #expect(Fixture.text(text.body) == "id=10")
        #expect(Fixture.text(FCMHTTPAnswer(FCMTopicResponse.messageID(MessageID(3)), encoding: .json).body)
            == #"{"message_id":3}"#)
    }
}
