import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// The node's `LISTEN` connection: turns other nodes' commit notifications into remote-commit calls and auth cache
/// invalidations. When the connection is lost it reconnects with a back-off; after it is back, every live stream is
/// told to read the store from its cursor (``RemoteCommit/unknown``) and the auth cache is cleared, since
/// notifications sent meanwhile are gone: late, never lost.
final class PostgresListener: Sendable {
    private let context: PostgresStoreContext
    private let listening = NIOLockedValueBox<CheckedContinuation<Void, any Error>?>(nil)

    init(context: PostgresStoreContext) {
        self.context = context
    }

    /// Runs until cancelled; `started` is resumed once the first `LISTEN` is active (or with the first failure).
    func run(started: CheckedContinuation<Void, any Error>) async {
        self.listening.withLockedValue { $0 = started }
        var connected = 0
        var delay = Duration.milliseconds(50)
        while !Task.isCancelled {
            do {
                let connection = try await self.context.connect(id: 2000 + connected)
                connected += 1
                do {
                    try await connection.listen(on: PostgresStoreContext.channel) { notifications in
                        if let started = self.listening.withLockedValue({ $0.take() }) {
                            started.resume()
                        } else {
                            self.missedNotifications()
                        }
                        delay = .milliseconds(50)
                        for try await notification in notifications {
                            self.handle(notification.payload)
                        }
                    }
                } catch {
                    if !Task.isCancelled {
                        self.context.logger.warning(
                            "PostgreSQL notification connection lost; reconnecting",
                            metadata: ["relay.error": "\(PostgresStoreContext.describe(error))"])
                    }
                }
                try? await connection.close()
            } catch {
                if let started = self.listening.withLockedValue({ $0.take() }) {
                    started.resume(throwing: error)
                    return
                }
                self.context.logger.warning(
                    "cannot reach PostgreSQL for notifications; retrying", metadata: ["relay.error": "\(error)"])
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(1))
        }
    }

    /// `node auth-flag devices` (see ``PostgresWriter``): a device list, `*` (too many to list) or `-` (none).
    private func handle(_ payload: String) {
        let fields = payload.split(separator: " ", maxSplits: 2)
        guard fields.count == 3, fields[0] != self.context.node else { return }
        if fields[1] == "a" {
            self.context.authCache.invalidate(epoch: nil)
        }
        guard fields[2] != "-", let observer = self.context.remoteObserver.withLockedValue({ $0 }) else { return }
        if fields[2] == "*" {
            observer(.unknown)
        } else {
            observer(.devices(fields[2].split(separator: ",").compactMap { Int64($0) }.map { DeviceID(rawValue: $0) }))
        }
    }

    private func missedNotifications() {
        self.context.authCache.invalidate(epoch: nil)
        self.context.remoteObserver.withLockedValue { $0 }?(.unknown)
    }
}

extension Optional {
    /// The value, leaving nil behind.
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
