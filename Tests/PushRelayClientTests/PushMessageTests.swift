import PushRelayWire
import Testing

@testable import PushRelayClient

@Suite("PushMessage")
struct PushMessageTests {
    @Test("reads id, sender id, title, body and data from the envelope")
    func fields() throws {
        var envelope = Scenario.envelope()
        envelope["score"] = "5"
        envelope["collapse_key"] = "orders"
        envelope["from"] = "/topics/orders"
        let message = PushMessage(id: Scenario.messageID, envelope: envelope)
        #expect(message.senderID == Scenario.senderID)
        #expect(message.title == "Provedor de Mensagens")
        #expect(message.body == "Status do pedido")
        #expect(message.data == ["score": "5"])
        #expect(message.collapseKey == "orders")
        #expect(message.from == "/topics/orders")
        #expect(message.notificationValues.keys.sorted() == ["orderInfo"])
        #expect(message.userInfo == envelope)
    }

    @Test("a numeric sender id and a plain-string alert")
    func variants() {
        let message = PushMessage(id: "1", envelope: ["google.c.sender.id": 19283323559, "aps": ["alert": "Hi"]])
        #expect(message.senderID == "19283323559")
        #expect(message.body == "Hi")
        #expect(message.title == nil)
    }

    @Test("JSON keeps large integer ids and round-trips through text")
    func json() throws {
        let value = try JSON.parse(#"{"id": 1603214613006763, "f": 1.5, "n": null, "b": true, "a": ["x"]}"#)
        #expect(value["id"] == .integer(1_603_214_613_006_763))
        #expect(value["f"] == 1.5)
        #expect(value["id"]?.intValue == 1_603_214_613_006_763)
        // Keys keep document order; jsonText sorts them, and reads back as the sorted value.
        #expect(value.objectValue?.keys == ["id", "f", "n", "b", "a"])
        #expect(try JSON.parse(value.jsonText) == value.sortingKeys())
        #expect(JSON(["b": 1, "a": "x/y"] as [String: JSON]).jsonText == #"{"a":"x/y","b":1}"#)
    }
}
