/// What another node committed, as ``PushStore/setRemoteCommitObserver(_:)`` reports it.
public enum RemoteCommit: Hashable, Sendable {
    /// Rows were appended to these devices' queues.
    case devices([DeviceID])
    /// Some commits may have been missed (the notification connection was lost, or a batch named too many devices
    /// for one notification): every live stream should read the store from its cursor.
    case unknown
}
