public import Logging
public import ServiceLifecycle
import UnixSignals

/// How the daemon's services start and stop: the lead's `serve` builds its `ServiceGroup` here.
public enum RelayServiceGroup {
    /// A service group that shuts down gracefully on SIGTERM and SIGINT (services in reverse order), gives the
    /// drain `shutdown_drain_timeout`, then cancels whatever still runs; SIGQUIT cancels at once.
    ///
    /// - Parameters:
    ///   - services: the daemon's services in start order (store, delivery, listeners, …). The systemd watchdog is
    ///     put first, so that it is stopped last and keeps pinging through the drain.
    ///   - watchdog: the ``SystemdWatchdogService`` (or `nil`).
    public static func make(
        services: [any Service],
        watchdog: SystemdWatchdogService?,
        configuration: PushRelayConfiguration,
        logger: Logger
    ) -> ServiceGroup {
        var all: [any Service] = []
        if let watchdog { all.append(watchdog) }
        all += services
        var groupConfiguration = ServiceGroupConfiguration(
            services: all.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
            logger: logger
        )
        groupConfiguration.gracefulShutdownSignals = [.sigterm, .sigint]
        groupConfiguration.cancellationSignals = [.sigquit]
        groupConfiguration.maximumGracefulShutdownDuration = configuration.shutdownDrainTimeout
        groupConfiguration.maximumCancellationDuration = .seconds(5)
        return ServiceGroup(configuration: groupConfiguration)
    }
}
