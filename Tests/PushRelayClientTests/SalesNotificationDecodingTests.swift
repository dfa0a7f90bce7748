import PushRelayWire
import Testing

@testable import PushRelayClient

@Suite("SalesNotification decoding")
struct SalesNotificationDecodingTests {
    private func message(orderInfo: JSON?) -> PushMessage {
        var envelope = Scenario.envelope()
        envelope["gcm.notification.orderInfo"] = orderInfo
        return PushMessage(id: Scenario.messageID, envelope: envelope)
    }

    private func orderInfo(_ fields: [String: JSON]) -> [String: JSON] {
        var base: [String: JSON] = [
            "newOrderStatus": "Novo pedido", "userEmail": "matilde@siecola.com.br", "infoReason": "Status de pedido",
        ]
        base.merge(fields) { _, new in new }
        return base
    }

    @Test("the device envelope of the course: JSON text with orderId")
    func courseEnvelope() throws {
        let message = PushMessage(id: Scenario.messageID, envelope: Scenario.envelope())
        #expect(try message.salesNotification() == Scenario.notification)
    }

    @Test("the sender's shape: a nested object with orderID")
    func nestedObject() throws {
        let message = PushMessage(id: Scenario.messageID, envelope: Scenario.nestedEnvelope())
        #expect(try message.salesNotification() == Scenario.notification)
    }

    @Test("every accepted spelling and type of the id, as text and as object", arguments: [
        ("orderID", JSON.integer(3)), ("orderId", .integer(3)), ("orderID", .string("3")), ("orderId", .string("3")),
    ])
    func acceptedIDs(key: String, value: JSON) throws {
        let fields = orderInfo([key: value])
        #expect(try message(orderInfo: JSON(fields)).salesNotification() == Scenario.notification)
        #expect(try message(orderInfo: .string(JSON(fields).jsonText)).salesNotification()
            == Scenario.notification)
    }

    @Test("both spellings with the same value are accepted")
    func bothSpellingsAgree() throws {
        let fields = orderInfo(["orderID": 3, "orderId": "3"])
        #expect(try message(orderInfo: JSON(fields)).salesNotification() == Scenario.notification)
    }

    @Test("a malformed or missing field names the field", arguments: [
        (["userEmail": JSON.null], "missingField", "userEmail"),
        (["userEmail": 7], "invalidField", "userEmail"),
        (["newOrderStatus": ["a"]], "invalidField", "newOrderStatus"),
        (["infoReason": false], "invalidField", "infoReason"),
        (["orderID": "three"], "invalidField", "orderID"),
        (["orderId": "3.5"], "invalidField", "orderId"),
        (["orderID": 3.5], "invalidField", "orderID"),
        (["orderID": JSON.null], "missingField", "orderID"),
        (["orderID": true], "invalidField", "orderID"),
        (["orderID": 3, "orderId": 4], "invalidField", "orderID"),
    ] as [([String: JSON], String, String)])
    func malformedField(fields: [String: JSON], code: String, field: String) {
        var info = orderInfo(fields)
        if fields["orderID"] == nil && fields["orderId"] == nil { info["orderID"] = 3 }
        for form in [JSON(info), .string(JSON(info).jsonText)] {
            #expect {
                try message(orderInfo: form).salesNotification()
            } throws: { error in
                let error = error as? NotificationDecodingError
                return error?.code.description == code && error?.field == field && error?.notificationKey == "orderInfo"
            }
        }
    }

    @Test("each missing field is named", arguments: ["newOrderStatus", "userEmail", "infoReason", "orderID"])
    func missingField(field: String) {
        var info = orderInfo(["orderID": 3])
        info[field] = nil
        #expect {
            try message(orderInfo: JSON(info)).salesNotification()
        } throws: { error in
            let error = error as? NotificationDecodingError
            return error?.code == .missingField && error?.field == field
        }
    }

    @Test("no orderInfo at all, or not an object", arguments: [
        (nil, "missingNotification", "gcm.notification.orderInfo"),
        (JSON.string("not json {"), "notJSON", "gcm.notification.orderInfo"),
        (JSON.string(""), "notJSON", "gcm.notification.orderInfo"),
        (JSON.integer(3), "invalidField", "gcm.notification.orderInfo"),
        (JSON.string("[1, 2]"), "invalidField", "gcm.notification.orderInfo"),
        (JSON.string("\"text\""), "invalidField", "gcm.notification.orderInfo"),
    ] as [(JSON?, String, String)])
    func wrongNotification(value: JSON?, code: String, field: String) {
        #expect {
            try message(orderInfo: value).salesNotification()
        } throws: { error in
            let error = error as? NotificationDecodingError
            return error?.code.description == code && error?.field == field
        }
    }

    @Test("encoding writes orderID as a number and decodes back")
    func roundTrip() throws {
        let json = try JSON.parse(JSONEncoderHelper.encode(Scenario.notification))
        #expect(json["orderID"] == .integer(3))
        #expect(json["orderId"] == nil)
        #expect(try json.decode(SalesNotification.self) == Scenario.notification)
    }

    @Test("the generic decode works for any Decodable under any key")
    func genericDecode() throws {
        struct Coupon: Decodable, Equatable { var code: String }
        var envelope = Scenario.envelope()
        envelope["gcm.notification.coupon"] = "{\"code\": \"X1\"}"
        let message = PushMessage(id: "1", envelope: envelope)
        #expect(try message.decode(Coupon.self, forNotificationKey: "coupon") == Coupon(code: "X1"))
        #expect(throws: NotificationDecodingError.self) {
            try message.decode(Coupon.self, forNotificationKey: "missing")
        }
    }
}
