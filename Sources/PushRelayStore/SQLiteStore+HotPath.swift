public import PushRelayCore

extension SQLiteStore {
    /// See ``PushStore/cachedProject(serverKey:)``. Nil also while the authentication epoch is due for a check
    /// (at most every ``Configuration/authRecheckInterval``): that lookup reads the database.
    public func cachedProject(serverKey key: String) -> Project? {
        self.context.authCache.cachedProject(
            serverKey: key, recheckInterval: self.context.configuration.authRecheckInterval,
            nowMicros: self.context.nowMicros)
    }

    /// See ``PushStore/cachedDevices(tokens:)``.
    public func cachedDevices(tokens: [String]) -> [Device]? {
        self.context.authCache.cachedDevices(tokens: tokens, recheckInterval: self.context.configuration.authRecheckInterval)
    }

    /// See ``PushStore/cachedDevice(secret:)``.
    public func cachedDevice(secret: String) -> Device? {
        self.context.authCache.cachedDevice(secret: secret, recheckInterval: self.context.configuration.authRecheckInterval)
    }

    /// See ``PushStore/acknowledge(device:ids:completion:)``.
    public func acknowledge(
        device: DeviceID,
        ids: [MessageID],
        completion: @escaping @Sendable (Result<Int, any Error>) -> Void
    ) {
        guard !ids.isEmpty else { return completion(.success(0)) }
        self.writer.submit({ transaction in try transaction.acknowledge(device: device, ids: ids) }, completion: completion)
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
