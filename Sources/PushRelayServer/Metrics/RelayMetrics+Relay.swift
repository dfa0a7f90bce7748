import PushRelayCore
import PushRelayHTTP
import PushRelayStore

extension RelayMetrics {
    /// Counts a send's per-target outcomes: message ids as accepted, errors by their FCM code; a dry run's fake
    /// ids are neither (nothing was committed).
    func sendAnswered(_ results: [FCMSendResponse.Result]) {
        var accepted = 0
        for result in results {
            switch result {
            case .messageID: accepted += 1
            case .dryRun: break
            case .error(let error): sendsRejected(error: error.code.wireName)
            }
        }
        if accepted > 0 { sendsAccepted(count: accepted) }
    }

    /// A whole request refused (401, 400, Unavailable, or a message-wide error of a topic send).
    func sendRejected(_ code: FCMError.Code) {
        sendsRejected(error: code.wireName)
    }

    /// What the HTTP server did with a connection.
    @Sendable func connection(_ event: HTTPServer.ConnectionEvent) {
        switch event {
        case .opened: connectionOpened()
        case .closed: connectionClosed()
        case .refusedOverLimit: connectionRefusedOverLimit()
        case .refusedOverAddressLimit: connectionRefusedOverAddressLimit()
        }
    }

    /// What a commit dropped undelivered.
    func dropped(_ dropped: DroppedMessages) {
        if dropped.collapsed > 0 { messagesDropped(reason: .collapsed, count: dropped.collapsed) }
        if dropped.overflow > 0 { messagesDropped(reason: .overflow, count: dropped.overflow) }
        if dropped.unregistered > 0 { messagesDropped(reason: .unregistered, count: dropped.unregistered) }
    }

    /// What a purge removed.
    func purged(_ report: PurgeReport) {
        if report.expiredMessages > 0 { messagesExpired(count: report.expiredMessages) }
    }
}
