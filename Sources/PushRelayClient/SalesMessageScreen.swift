/// The immutable view state of the course's screen, built from the model in one `init(fromModel:)`.
///
/// ```
/// Message Id: 1603214613006763
/// Reason: Status de pedido
/// Order Id: 3
/// Status: Novo pedido
/// Email: matilde@siecola.com.br
/// ```
public struct SalesMessageScreen: Sendable, Hashable {
    /// `Message Id: <id>`.
    public let messageIdText: String
    /// `Reason: <infoReason>`.
    public let reasonText: String
    /// `Order Id: <orderID>`.
    public let orderIdText: String
    /// `Status: <newOrderStatus>`.
    public let statusText: String
    /// `Email: <userEmail>`.
    public let emailText: String

    /// Builds the screen for a notification and its message id.
    public init(messageID: String, fromModel model: SalesNotification) {
        messageIdText = "Message Id: \(messageID)"
        reasonText = "Reason: \(model.infoReason)"
        orderIdText = "Order Id: \(model.orderID)"
        statusText = "Status: \(model.newOrderStatus)"
        emailText = "Email: \(model.userEmail)"
    }

    /// The five lines, top to bottom.
    public var lines: [String] { [messageIdText, reasonText, orderIdText, statusText, emailText] }

    /// The five lines joined with newlines (no trailing newline).
    public var text: String { lines.joined(separator: "\n") }
}
