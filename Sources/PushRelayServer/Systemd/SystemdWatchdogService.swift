public import Logging
public import ServiceLifecycle

/// Sends `WATCHDOG=1` to systemd at half the `WatchdogSec=` interval for as long as the daemon runs.
///
/// Put it first in the `ServiceGroup`'s services so that it is shut down last and keeps pinging through the drain.
/// Without a watchdog interval (no `WATCHDOG_USEC`), it just waits for the graceful shutdown.
public struct SystemdWatchdogService: Service {
    private let notifier: SystemdNotifier
    private let logger: Logger

    /// The time between two pings: half of ``SystemdNotifier/watchdogInterval``, or `nil` without a watchdog.
    public let pingInterval: Duration?

    /// A watchdog for `notifier`'s interval.
    public init(notifier: SystemdNotifier, logger: Logger) {
        self.notifier = notifier
        self.logger = logger
        self.pingInterval = notifier.isEnabled ? notifier.watchdogInterval.map { $0 / 2 } : nil
    }

    /// Pings until graceful shutdown or cancellation; never throws (a failed ping is logged).
    public func run() async throws {
        guard let pingInterval else {
            try? await gracefulShutdown()
            return
        }
        logger.debug("systemd watchdog on", metadata: ["relay.watchdog.interval": "\(pingInterval)"])
        let notifier = self.notifier
        let logger = self.logger
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    do {
                        try notifier.watchdog()
                    } catch {
                        logger.warning("systemd watchdog ping failed", metadata: ["error": "\(error)"])
                    }
                    try await Task.sleep(for: pingInterval)
                }
            }
        } catch is CancellationError {
            return
        }
    }
}
