/// What a node of a shared database committed (another node, or on PostgreSQL this one too: every commit comes
/// this way, in commit order), as ``PushStore/setRemoteCommitObserver(_:)`` reports it.
public enum RemoteCommit: Hashable, Sendable {
    /// Rows were appended to these devices' queues (read them from the store).
    case devices([DeviceID])
    /// These rows were appended, read back once by this node for all its streams (in id order): hand them to the
    /// streams as the commit observer's rows are.
    case rows([StoredMessage])
    /// Some commits may have been missed (the notification connection was lost, or a batch named too many devices
    /// for one notification): every live stream should read the store from its cursor.
    case unknown
}
