/// A new device and its secret in clear. The store keeps only the secret's SHA-256 hash: this value is the one and
/// only time the secret can be read. It goes to the device and nowhere else; never log it.
public struct DeviceRegistration: Hashable, Sendable {
    /// The device registered (its token is public).
    public var device: Device
    /// The device secret: the Bearer credential that opens the device's stream.
    public var secret: String

    /// Creates a value.
    public init(device: Device, secret: String) {
        self.device = device
        self.secret = secret
    }
}
