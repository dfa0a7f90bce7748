import Logging
import NIOConcurrencyHelpers

/// Whether a store's writer can commit: the engine's error when its last transaction failed for a reason of the
/// engine (disk full, I/O error, read-only file, damaged file, the database unreachable) and none has committed
/// since. Both engines' writers report every outcome here; ``PushStore/commitFailure`` reads it.
///
/// Only a commit that proves there is room again ends a failure: one that stored messages, or the store's probe
/// (``PushStore/probeCommit()``, larger than a message). A small commit (an acknowledgement, a token refresh) can
/// succeed on a full disk by reusing free pages, and must not report the store healthy while sends still fail.
final class CommitHealth: Sendable {
    private let failure = NIOLockedValueBox<StoreError?>(nil)
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// The failure, or nil while commits succeed.
    var current: StoreError? { self.failure.withLockedValue { $0 } }

    /// `error` when it says the engine cannot commit, as opposed to a request's own refusal (`alreadyExists`,
    /// `invalidArgument`, `notFound`): those leave the store healthy.
    static func engineFailure(_ error: (any Error)?) -> StoreError? {
        guard let error = error as? StoreError, error.code == .unavailable || error.code == .corrupt else { return nil }
        return error
    }

    /// A transaction failed; `error` says why when it is the engine's (see ``engineFailure(_:)``), and other
    /// errors leave the health as it is.
    func failed(_ error: (any Error)?) {
        guard let failure = Self.engineFailure(error) else { return }
        let previous = self.failure.withLockedValue { current in
            defer { current = failure }
            return current
        }
        guard previous == nil else { return }
        if failure.code == .corrupt {
            self.logger.critical(
                "the store is damaged; writes fail until it is repaired or restored",
                metadata: ["relay.error": "\(failure)"])
        } else {
            self.logger.error(
                "the store cannot commit; sends answer Unavailable until it can", metadata: ["relay.error": "\(failure)"])
        }
    }

    /// A transaction committed. It ends a failure only when `provingCapacity`: it stored messages, or it was the
    /// probe.
    func committed(provingCapacity: Bool) {
        guard provingCapacity else { return }
        let previous = self.failure.withLockedValue { current in
            defer { current = nil }
            return current
        }
        if previous != nil {
            self.logger.notice("the store commits again")
        }
    }
}
