public import PushRelayCore

extension SQLiteStore {
    /// See ``PushStore/cachedProject(serverKey:)``. Nil also while the authentication epoch is due for a check
    /// (at most every ``Configuration/authRecheckInterval``): that lookup reads the database.
    public func cachedProject(serverKey key: String) -> Project? {
        self.context.authCache.cachedProject(
            serverKey: key, recheckInterval: self.context.configuration.authRecheckInterval,
            nowMicros: self.context.nowMicros)
    }

    /// See ``PushStore/cachedProject(accessToken:)``.
    public func cachedProject(accessToken token: String) -> Project? {
        self.context.authCache.cachedProject(
            accessToken: token, recheckInterval: self.context.configuration.authRecheckInterval,
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

    /// See ``PushStore/acknowledge(device:upTo:completion:)``.
    public func acknowledge(
        device: DeviceID, upTo: MessageID, completion: @escaping @Sendable (Result<Int, any Error>) -> Void
    ) {
        self.writer.submit({ transaction in try transaction.acknowledge(device: device, upTo: upTo) }, completion: completion)
    }

    /// See ``PushStore/enqueue(_:completion:)``.
    ///
    /// Time-to-live-0 messages take the writer's queue too, though nothing of them is stored: numbered there, in
    /// sequence with the stored rows, and completed after the commit of every row numbered before them has been
    /// handed to the streams (the commit observer runs before the completions). Numbered at once instead, one
    /// could reach a stream before a stored message with a lower id still in its commit, and a `Last-Event-ID`
    /// naming it would acknowledge that message unseen. (A group of them alone writes nothing: no fsync.)
    public func enqueue(
        _ messages: [NewMessage],
        completion: @escaping @Sendable (Result<[EnqueueResult], any Error>) -> Void
    ) {
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
