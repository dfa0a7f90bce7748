import PushRelayCore
import PushRelayWire
import Testing

/// The shop scenario of seed-scenario.md: its send body as written there, and the device's dictionary it shows, which
/// the envelope matches key for key except where the document itself says real clients differ (`orderId` in the
/// course's device log, `orderID` as the sender wrote it) and the `from` key PushRelay adds as FCM does.
@Suite("Seed scenario")
struct SeedScenarioTests {
    static let token =
        "eeDh2Sd5HknG1zdC1w1UBD:APA91bFKGr99Cpj7q1Es0oexCeoXf9qinT6GuI-pvCouR8AKueLR1zNc_QZVv_U7t068XGEbPheXZwLF5fvUNZ8c018jv6vMP-1tAQojY6Q4tDV3ySXN"

    static let body = """
        {
          "to": "\(token)",
          "notification": {
            "body": "Status do pedido",
            "title": "Provedor de Mensagens",
            "orderInfo": {
              "infoReason": "Status de pedido",
              "orderID": 3,
              "userEmail": "matilde@siecola.com.br",
              "newOrderStatus": "Novo pedido"
            }
          },
          "priority": "high",
          "content_available": true
        }
        """

    @Test func parsesTheScenarioBody() throws {
        let request = try FCMSendRequest.parse(json: Array(Self.body.utf8))
        #expect(request.encoding == .json)
        #expect(request.recipients == [FCMRecipient(token: Self.token, error: nil)])
        #expect(request.priority == .high)
        #expect(request.contentAvailable)
        #expect(request.messageError == nil)
        #expect(request.notification?.keys == ["body", "title", "orderInfo"])
        #expect(request.notification?["orderInfo"]?["orderID"]?.int64Value == 3)
        #expect(request.timeToLive == FCMLimits.defaultTimeToLive)
    }

    @Test func envelopeCarriesTheOrderAsJSONText() throws {
        let request = try FCMSendRequest.parse(json: Array(Self.body.utf8))
        let envelope = Envelope(request: request, senderID: SenderID("19283323559")!)
        let rendered = envelope.rendered(messageID: MessageID(1_603_214_613_006_763))
        let text = String(decoding: rendered, as: UTF8.self)
        #expect(!text.contains("\n"))
        #expect(
            text
                == #"{"gcm.message_id":"1603214613006763","google.c.sender.id":"19283323559","google.c.a.e":"1","#
                + #""aps":{"alert":{"title":"Provedor de Mensagens","body":"Status do pedido"},"content-available":1},"#
                + #""gcm.notification.orderInfo":"{\"infoReason\":\"Status de pedido\",\"orderID\":3,"#
                + #"\"userEmail\":\"matilde@siecola.com.br\",\"newOrderStatus\":\"Novo pedido\"}","#
                + #""from":"19283323559"}"#
        )
        let decoded = try JSONValue.parse(rendered)
        #expect(decoded["gcm.message_id"] == "1603214613006763")
        #expect(decoded["aps"]?["alert"]?["title"] == "Provedor de Mensagens")
        #expect(decoded["aps"]?["content-available"] == 1)
        let orderText = try #require(decoded["gcm.notification.orderInfo"]?.stringValue)
        let order = try JSONValue.parse(orderText)
        #expect(order["infoReason"] == "Status de pedido")
        #expect(order["orderID"] == 3)
        #expect(order["userEmail"] == "matilde@siecola.com.br")
        #expect(order["newOrderStatus"] == "Novo pedido")
    }

    /// Section 3 of seed-scenario.md, verbatim.
    static let deviceDictionaryAsWritten = #"""
        {
          "gcm.message_id": "1603214613006763",
          "google.c.sender.id": "19283323559",
          "google.c.a.e": "1",
          "gcm.notification.orderInfo": "{\"newOrderStatus\": \"Novo pedido\", \"orderId\": 3, \"userEmail\": \"matilde@siecola.com.br\", \"infoReason\": \"Status de pedido\"}",
          "aps": {"alert": {"title": "Provedor de Mensagens", "body": "Status do pedido"}, "content-available": 1}
        }
        """#

    @Test func envelopeMatchesTheDeviceDictionaryOfTheScenario() throws {
        let request = try FCMSendRequest.parse(json: Array(Self.body.utf8))
        let envelope = Envelope(request: request, senderID: SenderID("19283323559")!)
        let rendered = try JSONValue.parse(envelope.rendered(messageID: MessageID(1_603_214_613_006_763)))
        let written = try JSONValue.parse(Self.deviceDictionaryAsWritten)
        let renderedObject = try #require(rendered.objectValue)
        let writtenObject = try #require(written.objectValue)
        // Every key the scenario shows, plus `from` (the sender id, as FCM adds it).
        #expect(Set(renderedObject.keys) == Set(writtenObject.keys).union(["from"]))
        #expect(rendered["from"] == "19283323559")
        for key in ["gcm.message_id", "google.c.sender.id", "google.c.a.e", "aps"] {
            #expect(rendered[key] == written[key], "\(key)")
        }
        // The order as JSON text: the same object once the device log's `orderId` is spelled as the sender wrote it.
        let renderedOrder = try Self.members(try #require(rendered["gcm.notification.orderInfo"]?.stringValue))
        var writtenOrder = try Self.members(try #require(written["gcm.notification.orderInfo"]?.stringValue))
        writtenOrder["orderID"] = writtenOrder.removeValue(forKey: "orderId")
        #expect(renderedOrder == writtenOrder)
    }

    /// The members of a JSON object's text, by key (the device sees a dictionary: order does not matter).
    static func members(_ text: String) throws -> [String: JSONValue] {
        let object = try #require(try JSONValue.parse(text).objectValue)
        return Dictionary(uniqueKeysWithValues: object.map { ($0.key, $0.value) })
    }

    @Test func storedBodyHasNoMessageID() throws {
        let request = try FCMSendRequest.parse(json: Array(Self.body.utf8))
        let envelope = Envelope(request: request, senderID: SenderID("19283323559")!)
        let stored = try JSONValue.parse(envelope.body)
        #expect(stored["gcm.message_id"] == nil)
        #expect(stored["google.c.sender.id"] == "19283323559")
    }

    @Test func responseMatchesTheScenarioShape() throws {
        let response = FCMSendResponse(
            multicastID: MulticastID(3_529_387_488_852_107_593),
            results: [.messageID(MessageID(1_603_214_613_006_763))]
        )
        #expect(
            String(decoding: response.jsonBody(), as: UTF8.self)
                == #"{"multicast_id":3529387488852107593,"success":1,"failure":0,"canonical_ids":0,"#
                + #""results":[{"message_id":"1603214613006763"}]}"#
        )
    }

    @Test func scenarioTokenIsWellFormed() {
        #expect(RegistrationToken.isWellFormed(Self.token))
    }
}
