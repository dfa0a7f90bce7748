public import Foundation

/// A registered device (an app instance) of a project.
public struct Device: Hashable, Sendable {
    /// The store's id of the device.
    public var id: DeviceID
    /// The project it belongs to.
    public var project: ProjectID
    /// Its registration token: the public address senders use.
    public var token: String
    /// The app identifier given at registration (e.g. a bundle id).
    public var app: String
    /// The platform given at registration (e.g. `IOS`, `ANDROID`, `LINUX`).
    public var platform: String
    /// When it was registered.
    public var registeredAt: Date

    /// Creates a value (the store creates devices; this is for tests and other store implementations).
    public init(id: DeviceID, project: ProjectID, token: String, app: String, platform: String, registeredAt: Date) {
        self.id = id
        self.project = project
        self.token = token
        self.app = app
        self.platform = platform
        self.registeredAt = registeredAt
    }
}
