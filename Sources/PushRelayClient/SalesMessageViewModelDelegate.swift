#if canImport(Observation)
/// Told about every state change of a ``SalesMessageViewModel``, the way the course's view controllers are.
///
/// The view model holds its delegate `weak`ly; the delegate decides how to present each state.
@MainActor
public protocol SalesMessageViewModelDelegate: AnyObject {
    /// The view model's ``SalesMessageViewModel/state`` changed to `state`; its other properties are already
    /// updated.
    func viewModelDidChanged(state: PushClientState)
}
#endif
