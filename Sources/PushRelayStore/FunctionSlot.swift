import NIOConcurrencyHelpers

/// A function that one thread sets (an observer, a filter) and others read on every call.
///
/// A function value kept in a generic container such as `NIOLockedValueBox<((Input) -> Output)?>` is re-abstracted
/// by a thunk on its way into and out of the container's `inout` access, and the thunk is written back: every
/// `withLockedValue { $0 }` wraps the stored function in one more thunk. Each call then costs more than the one
/// before, and after about a million reads a call overflows the stack (a PostgreSQL node read its commit observer
/// once per `NOTIFY`). Here the function crosses the lock inside a class, as a plain reference: reading it never
/// changes what is stored.
final class FunctionSlot<Input, Output>: Sendable {
    private final class Box: Sendable {
        let call: @Sendable (Input) -> Output

        init(_ call: @escaping @Sendable (Input) -> Output) {
            self.call = call
        }
    }

    private let box = NIOLockedValueBox<Box?>(nil)

    init() {}

    /// Replaces the function; nil removes it.
    func set(_ function: (@Sendable (Input) -> Output)?) {
        let box = function.map(Box.init)
        self.box.withLockedValue { $0 = box }
    }

    /// The function now, if one is set.
    var current: (@Sendable (Input) -> Output)? {
        self.box.withLockedValue { $0 }?.call
    }
}
