import PushRelayWire
@testable import PushRelayClient

/// The values of the course's scenario (seed-scenario.md §1–§4), exactly as they stand.
enum Scenario {
    static let token = """
        eeDh2Sd5HknG1zdC1w1UBD:APA91bFKGr99Cpj7q1Es0oexCeoXf9qinT6GuI-pvCouR8AKueLR1zNc_QZVv_U7t068XGEbPheXZwLF5fvU\
        NZ8c018jv6vMP-1tAQojY6Q4tDV3ySXN
        """
    static let messageID = "1603214613006763"
    static let senderID = "19283323559"
    static let orderInfoText = """
        {"newOrderStatus": "Novo pedido", "orderId": 3, "userEmail": "matilde@siecola.com.br", \
        "infoReason": "Status de pedido"}
        """
    static let notification = SalesNotification(newOrderStatus: "Novo pedido", userEmail: "matilde@siecola.com.br",
                                                orderID: 3, infoReason: "Status de pedido")
    static let screen = """
        Message Id: 1603214613006763
        Reason: Status de pedido
        Order Id: 3
        Status: Novo pedido
        Email: matilde@siecola.com.br
        """

    /// The envelope the device receives (§3), with `orderInfo` as JSON text.
    static func envelope(messageID: String = messageID, orderInfo: JSON = .string(orderInfoText)) -> [String: JSON] {
        [
            "gcm.message_id": .string(messageID),
            "google.c.sender.id": .string(senderID),
            "google.c.a.e": "1",
            "gcm.notification.orderInfo": orderInfo,
            "aps": ["alert": ["title": "Provedor de Mensagens", "body": "Status do pedido"], "content-available": 1],
        ]
    }

    /// The envelope with `orderInfo` as the sender wrote it (§2): a nested object with `orderID`.
    static func nestedEnvelope(messageID: String = messageID) -> [String: JSON] {
        envelope(messageID: messageID, orderInfo: [
            "infoReason": "Status de pedido", "orderID": 3, "userEmail": "matilde@siecola.com.br",
            "newOrderStatus": "Novo pedido",
        ])
    }
}
