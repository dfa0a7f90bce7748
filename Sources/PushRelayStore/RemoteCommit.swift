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
    /// This node's own ``PushStore/announceStream(device:attachment:)`` came back through the shared channel: every
    /// stream of the device announced after this point comes after that stream's (the channel is ordered).
    case streamAnnounced(DeviceID, attachment: UInt64)
    /// Another node announced a stream of the device: a stream of it here whose own announcement came back before
    /// is the older one, and ends (a device holds one stream, the newest).
    case streamOpenedElsewhere(DeviceID)
}
