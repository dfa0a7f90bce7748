/// A change to a project's device groups (``PushStore/changeDeviceGroup(_:project:)``): FCM's `/fcm/notification`
/// operations, on registration tokens the caller checked to be of the token format.
public enum DeviceGroupOperation: Hashable, Sendable {
    /// A new group named `name` with these members.
    case create(name: String, tokens: [String])
    /// These members join the group of `notificationKey`; `name`, when given, must be the group's.
    case add(notificationKey: String, name: String?, tokens: [String])
    /// These members leave the group of `notificationKey` (`name`, when given, must be the group's); a group left
    /// without members is deleted.
    case remove(notificationKey: String, name: String?, tokens: [String])
}

/// The outcome of ``PushStore/changeDeviceGroup(_:project:)``. Anything but ``done(notificationKey:)`` changed
/// nothing.
public enum DeviceGroupOutcome: Hashable, Sendable {
    /// Done; the group's key (also after a `remove` that deleted the group with its last member).
    case done(notificationKey: String)
    /// `create`: the project has a group of this name.
    case nameTaken
    /// `add`/`remove`: the project has no group with this key.
    case notFound
    /// `add`/`remove`: the name given is not the group's.
    case nameMismatch
    /// The group would have more than `FCMLimits.maxDeviceGroupMembers` (20) members.
    case tooManyMembers
    /// A token is not registered (`create`, `add`; `remove` ignores such a token: it is no member).
    case tokenNotRegistered(String)
    /// A token belongs to another project.
    case tokenOfAnotherProject(String)
}
