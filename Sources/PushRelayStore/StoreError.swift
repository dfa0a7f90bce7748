/// An error of the store. Compare by ``code``; new codes may be added without breaking callers.
public struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case unavailable, notFound, alreadyExists, invalidArgument, closed, corrupt, resourceExhausted
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The engine could not commit or read (I/O error, disk full, lock timeout…). Nothing was committed for the
        /// failed request: answer `Unavailable` with `Retry-After`.
        public static let unavailable = Code(.unavailable)
        /// The named project (or other object) does not exist.
        public static let notFound = Code(.notFound)
        /// A project with that name already exists.
        public static let alreadyExists = Code(.alreadyExists)
        /// The request is malformed for the store (empty name, TTL 0 topic message, uncompilable condition…).
        public static let invalidArgument = Code(.invalidArgument)
        /// The store was closed.
        public static let closed = Code(.closed)
        /// The database is not a PushRelay database, or of a newer schema.
        public static let corrupt = Code(.corrupt)
        /// A limit the caller set was reached (a project's device cap); nothing was written.
        public static let resourceExhausted = Code(.resourceExhausted)

        /// The code's name.
        public var description: String { "\(self.value)" }
    }

    /// The kind of failure.
    public var code: Code
    /// A human-readable explanation (never contains a key, secret or message body).
    public var message: String
    /// The SQLite extended result code when the engine reported one.
    public var engineCode: Int32?

    /// Creates an error.
    public init(code: Code, message: String, engineCode: Int32? = nil) {
        self.code = code
        self.message = message
        self.engineCode = engineCode
    }

    /// `code: message`.
    public var description: String {
        if let engineCode = self.engineCode {
            return "\(self.code): \(self.message) (engine code \(engineCode))"
        }
        return "\(self.code): \(self.message)"
    }

    /// See ``Code/unavailable``.
    public static func unavailable(_ message: String, engineCode: Int32? = nil) -> StoreError {
        StoreError(code: .unavailable, message: message, engineCode: engineCode)
    }

    /// See ``Code/notFound``.
    public static func notFound(_ message: String) -> StoreError { StoreError(code: .notFound, message: message) }

    /// See ``Code/alreadyExists``.
    public static func alreadyExists(_ message: String) -> StoreError {
        StoreError(code: .alreadyExists, message: message)
    }

    /// See ``Code/invalidArgument``.
    public static func invalidArgument(_ message: String) -> StoreError {
        StoreError(code: .invalidArgument, message: message)
    }

    /// See ``Code/closed``.
    public static let closed = StoreError(code: .closed, message: "the store is closed")

    /// A store written by a newer PushRelay (its schema `version` is past the `known` one of this build): not
    /// damaged, so not ``Code-swift.struct/corrupt`` (whose remedy is a backup), but unusable by this binary, which
    /// cannot downgrade it. ``Code-swift.struct/unavailable``: the CLI exits 69.
    static func newerSchema(_ version: Int64, known: Int64) -> StoreError {
        StoreError(
            code: .unavailable,
            message: "the store's schema is version \(version), newer than this PushRelay's \(known): it was written by a "
                + "newer release; run that release (a store cannot be downgraded)")
    }
}
