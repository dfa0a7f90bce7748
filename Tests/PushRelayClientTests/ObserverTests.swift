import PushRelayWire
import Observation
import Testing

@testable import PushRelayClient

/// Records what a delegate is told, and what the view model held at that moment.
@MainActor
final class RecordingDelegate: SalesMessageViewModelDelegate {
    var states: [PushClientState] = []
    var orderIDsSeen: [Int?] = []
    weak var viewModel: SalesMessageViewModel?

    func viewModelDidChanged(state: PushClientState) {
        states.append(state)
        orderIDsSeen.append(viewModel?.orderID)
    }
}

@Suite("Observers")
struct ObserverTests {
    private static let second = SalesNotification(newOrderStatus: "Enviado", userEmail: "matilde@siecola.com.br",
                                                   orderID: 4, infoReason: "Status de pedido")
    private static let sequence: [PushClientState] = [
        .registering,
        .registered(token: Scenario.token),
        .connecting,
        .connected(token: Scenario.token),
        .received(Scenario.notification, messageID: Scenario.messageID),
        .reconnecting(attempt: 1, after: .milliseconds(500)),
        .connecting,
        .received(second, messageID: "2"),
    ]

    @Test("the four forms see the same states in the same order, on the main actor")
    @MainActor
    func fourForms() async throws {
        let publisher = PushStatePublisher()
        let viewModel = SalesMessageViewModel()
        let delegate = RecordingDelegate()
        delegate.viewModel = viewModel
        viewModel.delegate = delegate
        publisher.attach(viewModel)
        let states = publisher.states()
        let notifications = publisher.salesNotifications()

        var observedChanges = 0
        var armed = false
        func track() {  // Re-arms only after the previous observation fired.
            guard !armed else { return }
            armed = true
            withObservationTracking {
                _ = viewModel.orderID
            } onChange: {
                MainActor.assumeIsolated {
                    observedChanges += 1
                    armed = false
                }
            }
        }
        track()
        for state in Self.sequence {
            publisher.publish(state)
            track()
        }

        // Delegate: the attach state, then every state, with the view model already updated each time.
        #expect(delegate.states == [.idle] + Self.sequence)
        #expect(delegate.orderIDsSeen == [nil, nil, nil, nil, nil, 3, 3, 3, 4])
        // Observable: orderID changed twice (3, then 4).
        #expect(observedChanges == 2)
        #expect(viewModel.messageId == "2" && viewModel.orderID == 4 && viewModel.newOrderStatus == "Enviado")
        #expect(viewModel.state == Self.sequence.last)
        // Streams: the state at subscription, then every state; the two notifications.
        #expect(try await states.first(Self.sequence.count + 1) == [.idle] + Self.sequence)
        #expect(try await notifications.first(2) == [
            ReceivedSalesNotification(messageID: Scenario.messageID, notification: Scenario.notification),
            ReceivedSalesNotification(messageID: "2", notification: Self.second),
        ])
    }

    @Test("the delegate is held weakly, and so is the view model")
    @MainActor
    func weakReferences() {
        let publisher = PushStatePublisher()
        weak var weakDelegate: RecordingDelegate?
        weak var weakViewModel: SalesMessageViewModel?
        do {
            let viewModel = SalesMessageViewModel()
            let delegate = RecordingDelegate()
            viewModel.delegate = delegate
            publisher.attach(viewModel)
            weakDelegate = delegate
            weakViewModel = viewModel
        }
        #expect(weakDelegate == nil)
        #expect(weakViewModel == nil)
        publisher.publish(.connecting)  // No crash with a released view model.
    }

    @Test("the screen of the view model is the course's screen")
    @MainActor
    func screen() {
        let publisher = PushStatePublisher()
        let viewModel = SalesMessageViewModel()
        publisher.attach(viewModel)
        #expect(viewModel.screen == nil)
        publisher.publish(.received(Scenario.notification, messageID: Scenario.messageID))
        #expect(viewModel.screen?.text == Scenario.screen)
        #expect(SalesMessageScreen(messageID: Scenario.messageID, fromModel: Scenario.notification).text
            == Scenario.screen)
    }

    @Test("a stream subscribed later starts at the current state; a finished publisher ends streams")
    @MainActor
    func lateSubscriber() async throws {
        let publisher = PushStatePublisher()
        publisher.publish(.connecting)
        let states = publisher.states()
        publisher.publish(.connected(token: nil))
        publisher.finish()
        var all: [PushClientState] = []
        for await state in states { all.append(state) }
        #expect(all == [.connecting, .connected(token: nil)])
    }

    /// An app payload other than the scenario's, under a notification key and under a data key.
    struct Coupon: Decodable, Sendable, Hashable {
        let code: String
        let percent: Int
    }

    @Test("notifications(of:key:) decodes any payload, JSON text or nested, and leaves out messages without it")
    @MainActor
    func genericNotifications() async throws {
        let publisher = PushStatePublisher()
        let sales = publisher.notifications(of: SalesNotification.self, key: "gcm.notification.orderInfo")
        let coupons = publisher.notifications(of: Coupon.self, key: "coupon")
        let scenario = PushMessage(id: Scenario.messageID, envelope: Scenario.envelope())
        let nested = PushMessage(id: "2", envelope: Scenario.nestedEnvelope(messageID: "2"))
        let couponText = PushMessage(id: "3", envelope: ["gcm.notification.coupon": #"{"code":"X1","percent":10}"#])
        let couponData = PushMessage(id: "4", envelope: ["coupon": ["code": "Y2", "percent": 20]])
        let broken = PushMessage(id: "5", envelope: ["coupon": #"{"code":"Z3"}"#])
        for message in [scenario, nested, couponText, couponData, broken] {
            publisher.publish(.receivedMessage(message), message: message)
        }
        publisher.finish()
        var salesSeen: [ReceivedNotification<SalesNotification>] = []
        for await element in sales { salesSeen.append(element) }
        #expect(salesSeen.map(\.messageID) == [Scenario.messageID, "2"])
        #expect(salesSeen.map(\.payload) == [Scenario.notification, Scenario.notification])
        var couponsSeen: [ReceivedNotification<Coupon>] = []
        for await element in coupons { couponsSeen.append(element) }
        #expect(couponsSeen.map(\.messageID) == ["3", "4"])
        #expect(couponsSeen.map(\.payload) == [Coupon(code: "X1", percent: 10), Coupon(code: "Y2", percent: 20)])
        #expect(couponsSeen.first?.message == couponText)
    }
}
