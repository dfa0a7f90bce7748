import Foundation

/// A value behind a lock, shared between tasks and threads. The client's only lock (Foundation's `NSLock`, so that
/// the library needs neither NIO nor a newer OS than macOS 14 for `Synchronization.Mutex`).
final class LockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value, holding the lock; never `await` inside.
    func withLockedValue<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
