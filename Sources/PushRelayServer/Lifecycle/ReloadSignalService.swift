import Dispatch
public import Logging
public import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a reload action on every SIGHUP (`systemctl reload pushrelay`, `ExecReload=/bin/kill -HUP $MAINPID`),
/// framed by `RELOADING=1` and `READY=1` notifications to systemd.
///
/// The action re-reads what can change without a restart (TLS certificate and key, log level, keys); a failing
/// action is logged and the daemon keeps running with what it had. Reloads do not overlap: a SIGHUP during a reload
/// causes one more reload after it. Once this service has started, SIGHUP no longer terminates the process.
///
/// When a config file is read, its `ReloadingFileProvider` traps SIGHUP (the process's one consumer of it, see
/// ``LiveConfiguration``) and this service runs on ``LiveConfiguration/reloadRequests`` instead.
public struct ReloadSignalService: Service {
    /// What a reload does; the returned text becomes the `STATUS=` line.
    public typealias Action = @Sendable () async throws -> String

    private let notifier: SystemdNotifier
    private let logger: Logger
    private let action: Action
    private let trigger: Trigger

    /// What starts a reload.
    private enum Trigger: Sendable {
        /// A signal this service traps itself.
        case signal(Int32)
        /// Requests from elsewhere (the config file's provider, which traps SIGHUP).
        case requests(AsyncStream<Void>)
    }

    /// A service running `action` on each SIGHUP.
    public init(notifier: SystemdNotifier, logger: Logger, action: @escaping Action) {
        self.init(notifier: notifier, logger: logger, signal: SIGHUP, action: action)
    }

    /// A service running `action` on each element of `requests` (``LiveConfiguration/reloadRequests``).
    public init(notifier: SystemdNotifier, logger: Logger, requests: AsyncStream<Void>, action: @escaping Action) {
        self.notifier = notifier
        self.logger = logger
        self.action = action
        self.trigger = .requests(requests)
    }

    /// A service running `action` on each `signal` (tests use another signal than SIGHUP).
    init(notifier: SystemdNotifier, logger: Logger, signal: Int32, action: @escaping Action) {
        self.notifier = notifier
        self.logger = logger
        self.action = action
        self.trigger = .signal(signal)
    }

    /// Waits for signals until graceful shutdown or cancellation.
    public func run() async throws {
        let signals: SignalStream?
        let stream: AsyncStream<Void>
        switch trigger {
        case .signal(let number):
            let trapped = SignalStream(signal: number)
            (signals, stream) = (trapped, trapped.stream)
        case .requests(let requests):
            (signals, stream) = (nil, requests)
        }
        defer { signals?.stop() }
        let action = self.action
        let notifier = self.notifier
        let logger = self.logger
        do {
            try await cancelWhenGracefulShutdown {
                for await _ in stream {
                    logger.info("reload requested (SIGHUP)")
                    do {
                        try notifier.reloading()
                    } catch {
                        logger.warning("systemd notification failed", metadata: ["error": "\(error)"])
                    }
                    var status: String
                    do {
                        status = try await action()
                        logger.info("reload done", metadata: ["relay.reload.status": "\(status)"])
                    } catch {
                        status = "reload failed: \(error)"
                        logger.error("reload failed, keeping the running configuration", metadata: ["error": "\(error)"])
                    }
                    do {
                        try notifier.ready(status: status)
                    } catch {
                        logger.warning("systemd notification failed", metadata: ["error": "\(error)"])
                    }
                }
                throw CancellationError()
            }
        } catch is CancellationError {
            return
        }
    }
}

/// A Unix signal as an `AsyncStream`, through a Dispatch signal source. The signal's default action is set to
/// ignore, so that the process is not killed; it stays ignored after ``stop()``.
/// `@unchecked`: a Dispatch source is thread-safe, and `source` is never reassigned.
private final class SignalStream: @unchecked Sendable {
    let stream: AsyncStream<Void>
    private let source: any DispatchSourceSignal

    init(signal number: Int32) {
        signal(number, SIG_IGN)
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { continuation.yield() }
        source.setCancelHandler { continuation.finish() }
        source.resume()
        self.stream = stream
        self.source = source
    }

    func stop() {
        source.cancel()
    }
}
