import Configuration
public import Logging
import Metrics
public import ServiceLifecycle
import SystemPackage
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `serve`'s configuration while it runs: flags and environment as they were at start, and the config file through
/// swift-configuration's `ReloadingFileProvider`, which re-reads the file when the process gets SIGHUP (and checks
/// it for changes every ``pollInterval``).
///
/// The provider is the process's one consumer of SIGHUP: on Linux each Dispatch signal source reads the signal from
/// a `signalfd` of its own, so a second consumer would get only some of the signals (measured: 3 of 8 lost). After
/// the provider has checked the file for a SIGHUP, ``reloadRequests`` yields, and the reload service applies the
/// configuration (``reloaded()``) and reloads the TLS certificate; the daemon applies a changed file on SIGHUP only,
/// never in the middle of an operator's edit.
public final class LiveConfiguration: Sendable {
    /// How often the provider checks the file's modification time between signals.
    public static let pollInterval: Duration = .seconds(30)

    /// The configuration at start.
    public let initial: LoadedConfiguration
    /// One element per SIGHUP, once the provider has checked the file for it; `nil` without a config file (the
    /// reload service then traps SIGHUP itself).
    public let reloadRequests: AsyncStream<Void>?
    private let inputs: ConfigurationInputs
    private let file: ConfigurationInputs.File?
    private let provider: ReloadingFileProvider<ConfigurationFile>?

    private init(
        initial: LoadedConfiguration,
        inputs: ConfigurationInputs,
        file: ConfigurationInputs.File? = nil,
        reloadRequests: AsyncStream<Void>? = nil
    ) {
        self.initial = initial
        self.inputs = inputs
        self.file = file
        self.provider = file?.provider as? ReloadingFileProvider<ConfigurationFile>
        self.reloadRequests = reloadRequests
    }

    /// Loads the configuration as ``ConfigurationLoader/load(arguments:environment:)`` does, keeping the config
    /// file (if one is named) in a `ReloadingFileProvider`.
    /// - Throws: ``ConfigurationError`` listing every problem found.
    public static func load(
        arguments: [String],
        environment: [String: String],
        logger: Logger
    ) async throws(ConfigurationError) -> LiveConfiguration {
        let inputs = ConfigurationInputs(arguments: arguments, environment: environment)
        let signals = SighupCounter()
        let (initial, file) = try await inputs.load { path in
            try await ReloadingFileProvider<ConfigurationFile>(
                filePath: FilePath(path),
                pollInterval: pollInterval,
                logger: logger,
                metrics: signals
            )
        }
        guard let file else { return LiveConfiguration(initial: initial, inputs: inputs) }
        // Until the provider's signal source is registered, a SIGHUP must not end the process (its default action).
        signal(SIGHUP, SIG_IGN)
        return LiveConfiguration(initial: initial, inputs: inputs, file: file, reloadRequests: signals.requests)
    }

    /// The service that keeps the file current (it traps SIGHUP and polls), to run beside the daemon; `nil` when no
    /// file is read.
    public var fileService: (any Service)? { provider }

    /// The configuration with the file as the provider read it for the last SIGHUP.
    ///
    /// When the provider could not take the file in (it keeps its last good snapshot, and logs why only at debug
    /// level), the file on disk is read once more here: its problems are thrown, with the line, and the daemon keeps
    /// its running configuration; a file that reads fine (one whose modification time was kept, say) counts as read.
    /// - Throws: ``ConfigurationError``.
    public func reloaded() async throws(ConfigurationError) -> LoadedConfiguration {
        guard let file, let provider else { return try inputs.evaluate(file: nil) }
        let onDisk = try await ConfigurationInputs.open(file.path) { path in
            try await FileProvider<ConfigurationFile>(filePath: FilePath(path))
        }
        let held = (provider.snapshot() as? ConfigurationFile)?.contents
        return try inputs.evaluate(file: held == onDisk.snapshot?.contents ? file : onDisk)
    }
}

/// The metrics factory handed to the `ReloadingFileProvider`: swift-configuration has no callback for "a SIGHUP was
/// handled", but the provider counts SIGHUPs (`<provider>_sighups_total`) right after its check of the file for one.
/// That counter feeds ``requests``; every other metric is dropped (the provider's figures are not on /metrics).
/// `ConfigurationReloadTests` fails if a later swift-configuration renames the counter.
private final class SighupCounter: MetricsFactory {
    let requests: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (requests, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    private final class Counter: CounterHandler {
        let continuation: AsyncStream<Void>.Continuation
        init(continuation: AsyncStream<Void>.Continuation) { self.continuation = continuation }
        func increment(by amount: Int64) { if amount > 0 { continuation.yield() } }
        func reset() {}
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        label.hasSuffix("_sighups_total") ? Counter(continuation: continuation) : NOOPMetricsHandler.instance
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        NOOPMetricsHandler.instance
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        NOOPMetricsHandler.instance
    }

    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}
