/// A device group, FCM's `notification_key`: a name, unique in its project, for up to
/// `FCMLimits.maxDeviceGroupMembers` (20) of the project's devices, and the key senders address it by.
///
/// A group lives as long as it has a member: removing its last member (by `remove`, unregistration or device expiry)
/// deletes it, as FCM does, and its key and name are free again.
public struct DeviceGroup: Hashable, Sendable {
    /// The project the group belongs to.
    public var project: ProjectID
    /// `notification_key_name`.
    public var name: String
    /// `notification_key`.
    public var notificationKey: String
    /// The members, in the order they joined (never empty).
    public var members: [Device]

    /// Creates a value (the store creates groups; this is for tests and other store implementations).
    public init(project: ProjectID, name: String, notificationKey: String, members: [Device]) {
        self.project = project
        self.name = name
        self.notificationKey = notificationKey
        self.members = members
    }
}
