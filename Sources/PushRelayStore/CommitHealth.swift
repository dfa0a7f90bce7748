import Logging
import NIOConcurrencyHelpers

/// Whether a store's writer can commit: the engine's error when its last transaction failed for a reason of the
/// engine (disk full, I/O error, read-only file, damaged file, the database unreachable) and none has committed
/// since. Both engines' writers report every outcome here; ``PushStore/commitFailure`` reads it.
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

    /// A transaction committed (`nil`) or failed for a reason of the engine. Logs when the store starts or stops
    /// failing, not at every failure.
    func note(_ error: StoreError?) {
        let previous = self.failure.withLockedValue { failure in
            defer { failure = error }
            return failure
        }
        if let error, previous == nil {
            if error.code == .corrupt {
                self.logger.critical(
                    "the store is damaged; writes fail until it is repaired or restored",
                    metadata: ["relay.error": "\(error)"])
            } else {
                self.logger.error(
                    "the store cannot commit; sends answer Unavailable until it can", metadata: ["relay.error": "\(error)"])
            }
        } else if error == nil, previous != nil {
            self.logger.notice("the store commits again")
        }
    }
}
