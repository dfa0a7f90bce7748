import PushRelayCore

extension SQLiteStore {
    /// See ``PushStore/cachedProject(serverKey:)``. Nil also while the authentication epoch is due for a check
    /// (at most every ``Configuration/authRecheckInterval``): that lookup reads the database.
    public func cachedProject(serverKey key: String) -> Project? {
        let cache = self.context.authCache
        guard !cache.epochCheckPending(interval: self.context.configuration.authRecheckInterval),
            let entry = cache.serverKey(KeyHash(of: key))
        else { return nil }
        if let validUntil = entry.validUntil, validUntil <= self.context.nowMicros { return nil }
        return entry.project
    }

    /// See ``PushStore/cachedDevices(tokens:)``.
    public func cachedDevices(tokens: [String]) -> [Device]? {
        let cache = self.context.authCache
        guard !cache.epochCheckPending(interval: self.context.configuration.authRecheckInterval) else { return nil }
        var devices: [Device] = []
        devices.reserveCapacity(tokens.count)
        for device in cache.devices(tokens: tokens) {
            guard let device else { return nil }
            devices.append(device)
        }
        return devices
    }

    /// See ``PushStore/enqueue(_:completion:)``.
    public func enqueue(
        _ messages: [NewMessage],
        completion: @escaping @Sendable (Result<[EnqueueResult], any Error>) -> Void
    ) {
        if messages.allSatisfy({ $0.timeToLive <= .zero }) {
            // Nothing to store: number them for the live delivery without a commit.
            completion(.success(messages.map { _ in .transient(self.nextTransientMessageID()) }))
            return
        }
        self.writer.submit({ transaction in
            var results: [EnqueueResult] = []
            results.reserveCapacity(messages.count)
            for message in messages {
                results.append(try transaction.enqueue(message))
            }
            return results
        }, completion: completion)
    }
}
