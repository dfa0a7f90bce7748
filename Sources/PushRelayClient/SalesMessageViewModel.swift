#if canImport(Observation)
public import Observation

/// The screen's model in the shop scenario: the last order notification, and the client's state.
///
/// An `@Observable` object (the Observation framework, on Linux as on Apple platforms): views, or
/// `withObservationTracking`, redraw from its properties. It also tells a `weak` ``delegate`` about every state,
/// as the course's view models do. Everything happens on the main actor.
///
/// ```swift
/// let viewModel = SalesMessageViewModel(client: client)
/// viewModel.delegate = self
/// // after the scenario: viewModel.orderID == 3, viewModel.userEmail == "matilde@siecola.com.br"
/// ```
@MainActor
@Observable
public final class SalesMessageViewModel {
    /// The message id of the last sales notification, e.g. `1603214613006763`.
    public private(set) var messageId: String?
    /// ``SalesNotification/infoReason`` of the last sales notification.
    public private(set) var infoReason: String?
    /// ``SalesNotification/orderID`` of the last sales notification.
    public private(set) var orderID: Int?
    /// ``SalesNotification/newOrderStatus`` of the last sales notification.
    public private(set) var newOrderStatus: String?
    /// ``SalesNotification/userEmail`` of the last sales notification.
    public private(set) var userEmail: String?
    /// The client's last state. Setting it (the client does) tells the ``delegate``.
    public private(set) var state: PushClientState = .idle {
        didSet { delegate?.viewModelDidChanged(state: state) }
    }

    /// Told about every state change; held weakly.
    @ObservationIgnored public weak var delegate: (any SalesMessageViewModelDelegate)?

    /// Creates a view model that follows nothing yet; ``PushClient/attach(_:)`` connects it.
    public init() {}

    /// Creates a view model that follows `client` (injected, as the course does).
    public convenience init(client: PushClient) {
        self.init()
        client.attach(self)
    }

    /// The screen for the last sales notification, or `nil` before the first one.
    public var screen: SalesMessageScreen? {
        guard let messageId, let infoReason, let orderID, let newOrderStatus, let userEmail else { return nil }
        return SalesMessageScreen(messageID: messageId, fromModel: SalesNotification(
            newOrderStatus: newOrderStatus, userEmail: userEmail, orderID: orderID, infoReason: infoReason))
    }

    /// Applies a state: the five values first when it is ``PushClientState/received(_:messageID:)``, then
    /// ``state`` (which tells the delegate).
    func apply(_ newState: PushClientState) {
        if case .received(let notification, let messageID) = newState {
            messageId = messageID
            infoReason = notification.infoReason
            orderID = notification.orderID
            newOrderStatus = notification.newOrderStatus
            userEmail = notification.userEmail
        }
        state = newState
    }
}
#endif
