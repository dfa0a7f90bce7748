import PushRelayCore
import PushRelayStore

/// One FCM send to tokens, as a value: what is answered without the store, the copies to commit, and the answer
/// once they are committed. The event-loop path and the task path of ``SendRoute`` both run it, so they answer alike.
struct TokenSend: Sendable {
    /// One result per recipient, in order; nil where the commit decides.
    private(set) var results: [FCMSendResponse.Result?]
    /// The well-formed tokens to look up, with their recipient index.
    let lookups: [(index: Int, token: String)]
    /// The recipients that get a copy, in the order of ``messages``.
    private(set) var targets: [Int] = []
    /// The copies to commit (empty for a dry run or when no recipient is valid).
    private(set) var messages: [NewMessage] = []
    /// Recipients whose token appeared earlier in the list, with that first index: a token repeated in
    /// `registration_ids` is sent once and every copy answers the first one's result.
    let duplicates: [(index: Int, first: Int)]

    init(recipients: [FCMRecipient]) {
        // Grown, not `Array(repeating:count:)`: that one looks the storage class of an array of optionals up at
        // run time (≈ 700 instructions a send).
        var results: [FCMSendResponse.Result?] = []
        results.reserveCapacity(recipients.count)
        for _ in recipients { results.append(nil) }
        var lookups: [(index: Int, token: String)] = []
        lookups.reserveCapacity(recipients.count)
        var firstIndex: [String: Int] = [:]
        var duplicates: [(index: Int, first: Int)] = []
        for (index, recipient) in recipients.enumerated() {
            if let error = recipient.error {
                results[index] = .error(error)
            } else if recipients.count > 1, let first = firstIndex.updateValue(index, forKey: recipient.token) {
                firstIndex[recipient.token] = first
                duplicates.append((index, first))
            } else {
                lookups.append((index, recipient.token))
            }
        }
        self.results = results
        self.lookups = lookups
        self.duplicates = duplicates
    }

    /// The tokens to resolve, in ``lookups`` order.
    var tokens: [String] { lookups.map(\.token) }

    /// Applies the looked-up devices (one per token of ``tokens``, nil when unknown) and builds the copies. A
    /// device past its message rate (`quotas`) answers `DeviceMessageRateExceeded` and gets no copy; a dry run
    /// counts against no quota.
    ///
    /// Generic over the sequence: the memory path's `[Device]` is passed as a lazy map to optionals, where an array
    /// argument would have been converted to `[Device?]`, a copy per send.
    mutating func resolve(
        _ devices: some Sequence<Device?>, send: FCMSendRequest, project: Project, quotas: SendQuotas? = nil
    ) {
        // The ids only: a copy of each device (its strings' reference counts) was kept for nothing.
        var found: [DeviceID] = []
        found.reserveCapacity(lookups.count)
        targets.reserveCapacity(lookups.count)
        for (lookup, device) in zip(lookups, devices) {
            guard let device else {
                results[lookup.index] = .error(FCMError(code: .notRegistered))
                continue
            }
            guard device.project == project.id else {
                results[lookup.index] = .error(FCMError(code: .mismatchSenderId))
                continue
            }
            if let package = send.restrictedPackageName, package != device.app {
                results[lookup.index] = .error(FCMError(code: .invalidPackageName))
                continue
            }
            targets.append(lookup.index)
            found.append(device.id)
        }
        if !send.dryRun, let quotas, quotas.devicePerMinute > 0, !found.isEmpty {
            let admitted = quotas.admit(devices: found)
            var keptTargets: [Int] = []
            var keptDevices: [DeviceID] = []
            for ((index, device), allowed) in zip(zip(targets, found), admitted) {
                if allowed {
                    keptTargets.append(index)
                    keptDevices.append(device)
                } else {
                    results[index] = .error(.deviceMessageRateExceeded)
                }
            }
            targets = keptTargets
            found = keptDevices
        }
        if send.dryRun {
            // Validated, not delivered: FCM answers a placeholder id.
            for index in targets { results[index] = .dryRun }
            targets = []
        } else if !found.isEmpty {
            let envelope = Envelope(request: send, senderID: SenderID(UInt64(project.senderID)))
            let ttl = Duration.seconds(send.timeToLive)
            messages = found.map {
                NewMessage(device: $0, body: envelope.body, collapseKey: send.collapseKey, timeToLive: ttl)
            }
        }
    }

    /// The response once ``messages`` are committed with these outcomes (none when nothing was committed).
    func response(outcomes: [EnqueueResult] = []) -> FCMSendResponse {
        // One new array, filled in place: a mutable copy of `results` would be copied again when first written (the
        // send's own value still holds it), then mapped into a third.
        var results = self.results.map { $0 ?? .error(FCMError(code: .internalServerError)) }
        for (index, outcome) in zip(targets, outcomes) {
            switch outcome {
            case .stored(let id), .transient(let id):
                results[index] = .messageID(id)
            case .deviceNotFound:
                results[index] = .error(FCMError(code: .notRegistered))
            }
        }
        for duplicate in duplicates { results[duplicate.index] = results[duplicate.first] }
        return FCMSendResponse(multicastID: .generate(), results: results)
    }
}
