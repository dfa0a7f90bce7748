import PushRelayCore
import PushRelayWire
import Testing

@Suite("Device envelope")
struct EnvelopeTests {
    let sender = SenderID(19_283_323_559)
    let id = MessageID(1_603_214_613_006_763)

    private func envelope(_ json: String) throws -> (text: String, value: JSONValue) {
        let request = try Fixture.request(json)
        let bytes = Envelope(request: request, senderID: sender).rendered(messageID: id)
        return (Fixture.text(bytes), try JSONValue.parse(bytes))
    }

    @Test func dataKeysAtTopLevelAsStrings() throws {
        let (text, value) = try envelope(
            #"{"to": "\#(Fixture.token)", "data": {"s": "x", "n": 3, "f": 1.50, "b": true, "z": null, "o": {"k": [1]}}}"#
        )
        #expect(value["s"] == "x")
        #expect(value["n"] == "3")
        #expect(value["f"] == "1.50")
        #expect(value["b"] == "true")
        #expect(value["z"] == "null")
        #expect(value["o"] == #"{"k":[1]}"#)
        #expect(value["aps"] == nil)  // a data message has no aps
        #expect(value["from"] == "19283323559")
        #expect(value["google.c.sender.id"] == "19283323559")
        #expect(value["google.c.a.e"] == "1")
        #expect(value.objectValue?.keys.first == "gcm.message_id")
        #expect(value.objectValue?.keys == [
            "gcm.message_id", "google.c.sender.id", "google.c.a.e", "s", "n", "f", "b", "z", "o", "from",
        ])
        #expect(!text.contains(" "))
    }

    @Test func notificationMapping() throws {
        let (_, value) = try envelope(
            #"""
            {"to": "\#(Fixture.token)", "mutable_content": true, "content_available": true, "collapse_key": "ck",
             "notification": {"title": "T", "subtitle": "S", "body": "B", "sound": "default", "badge": "3",
               "click_action": "CAT", "title_loc_key": "TK", "title_loc_args": ["a", 1], "body_loc_key": "BK",
               "body_loc_args": "[\"x\",\"y\"]", "icon": "ic", "color": "#ff0000", "tag": 7, "custom": {"a": "b"}}}
            """#
        )
        let aps = try #require(value["aps"])
        #expect(aps["alert"] == [
            "title": "T", "subtitle": "S", "body": "B", "title-loc-key": "TK", "title-loc-args": ["a", "1"],
            "loc-key": "BK", "loc-args": ["x", "y"],
        ])
        #expect(aps["badge"] == 3)
        #expect(aps["sound"] == "default")
        #expect(aps["category"] == "CAT")
        #expect(aps["content-available"] == 1)
        #expect(aps["mutable-content"] == 1)
        #expect(value["gcm.notification.icon"] == "ic")
        #expect(value["gcm.notification.color"] == "#ff0000")
        #expect(value["gcm.notification.tag"] == "7")
        #expect(value["gcm.notification.custom"] == #"{"a":"b"}"#)
        #expect(value["gcm.notification.title"] == nil)
        #expect(value["collapse_key"] == "ck")
    }

    @Test func badgeThatIsNotANumberStaysAString() throws {
        let (_, value) = try envelope(#"{"to": "\#(Fixture.token)", "notification": {"badge": "many"}}"#)
        #expect(value["aps"]?["badge"] == "many")
        let (_, numeric) = try envelope(#"{"to": "\#(Fixture.token)", "notification": {"badge": 0}}"#)
        #expect(numeric["aps"]?["badge"] == 0)
    }

    @Test func locArgsInOtherShapes() throws {
        let (_, value) = try envelope(#"{"to": "\#(Fixture.token)", "notification": {"body_loc_args": "plain"}}"#)
        #expect(value["aps"]?["alert"]?["loc-args"] == ["plain"])
    }

    @Test func contentAvailableAloneMakesASilentPush() throws {
        let (_, value) = try envelope(#"{"to": "\#(Fixture.token)", "content_available": true, "data": {"a": "b"}}"#)
        #expect(value["aps"] == ["content-available": 1])
    }

    @Test func topicSendsComeFromTheTopic() throws {
        let (_, topic) = try envelope(#"{"to": "/topics/news", "data": {"a": "b"}}"#)
        #expect(topic["from"] == "/topics/news")
        let (_, condition) = try envelope(#"{"condition": "'a' in topics", "data": {"a": "b"}}"#)
        #expect(condition["from"] == "19283323559")
    }

    @Test func relayKeysWinOverDataKeys() throws {
        let (text, value) = try envelope(
            #"{"to": "\#(Fixture.token)", "collapse_key": "real", "data": {"aps": "x", "collapse_key": "fake"}}"#
        )
        #expect(value["collapse_key"] == "real")
        #expect(value["aps"] == nil)
        #expect(!text.contains("fake"))
        let (_, kept) = try envelope(#"{"to": "\#(Fixture.token)", "data": {"collapse_key": "mine"}}"#)
        #expect(kept["collapse_key"] == "mine")
    }

    @Test func valuesWithNewlinesStayOnOneLine() throws {
        let (text, value) = try envelope(
            #"{"to": "\#(Fixture.token)", "notification": {"body": "a\nb", "x": {"q": "\"\\\n"}}, "data": {"k\"": "\r"}}"#
        )
        #expect(!text.contains("\n") && !text.contains("\r"))
        #expect(value["aps"]?["alert"]?["body"] == "a\nb")
        #expect(value["gcm.notification.x"] == #"{"q":"\"\\\n"}"#)
        #expect(value["k\""] == "\r")
    }

    @Test func storedBodyPlusIDEqualsRendered() throws {
        let request = try Fixture.request(SeedScenarioTests.body)
        let envelope = Envelope(request: request, senderID: sender)
        // What the store keeps: the envelope without its message id, starting with the sender.
        let stored = Fixture.text(envelope.body)
        #expect(stored.hasPrefix(#"{"google.c.sender.id":"19283323559","#))
        #expect(!stored.contains("gcm.message_id"))
        // Delivered: the id spliced in front of the stored members, byte for byte, by every writer.
        let expected = Array(#"{"gcm.message_id":"1603214613006763","#.utf8) + Array(envelope.body.dropFirst())
        #expect(Envelope(body: envelope.body).rendered(messageID: id) == expected)
        var buffer: [UInt8] = Array("data: ".utf8)
        envelope.render(messageID: id, into: &buffer)
        #expect(buffer == Array("data: ".utf8) + expected)
        #expect(envelope.prefix(messageID: id) + Array(envelope.tail) == expected)
    }

    @Test func emptyBodyStillRendersValidJSON() throws {
        let rendered = Envelope(body: Array("{}".utf8)).rendered(messageID: MessageID(5))
        #expect(Fixture.text(rendered) == #"{"gcm.message_id":"5"}"#)
    }

    @Test func deletedMessages() throws {
        let envelope = Envelope.deletedMessages(senderID: sender)
        #expect(
            Fixture.text(envelope.rendered(messageID: MessageID(9)))
                == #"{"gcm.message_id":"9","google.c.sender.id":"19283323559","message_type":"deleted_messages","#
                + #""from":"19283323559"}"#
        )
    }
}
