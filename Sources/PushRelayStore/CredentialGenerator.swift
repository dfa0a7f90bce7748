import PushRelayCore

/// Makes the random strings the store hands out: device tokens and secrets, server and client keys, device groups'
/// notification keys. Each carries at
/// least 128 random bits from the system's CSPRNG. The default uses the core module's formats; tests may swap the
/// generators through ``SQLiteStore/Configuration/credentials``.
public struct CredentialGenerator: Sendable {
    /// A registration token (``RegistrationToken``: `<22-char instance id>:APA91b<random>`).
    public var deviceToken: @Sendable () -> String
    /// A device secret (``Credentials/deviceSecret()``).
    public var deviceSecret: @Sendable () -> String
    /// A server key (``Credentials/serverKey()``).
    public var serverKey: @Sendable () -> String
    /// A client key (``Credentials/clientKey()``), like a Firebase API key.
    public var clientKey: @Sendable () -> String
    /// A device group's notification key (``NotificationKey``: `APA91b<random>`, never a token's shape).
    public var notificationKey: @Sendable () -> String

    /// Creates a generator from its functions; without `notificationKey`, keys have the core module's format.
    public init(
        deviceToken: @escaping @Sendable () -> String,
        deviceSecret: @escaping @Sendable () -> String,
        serverKey: @escaping @Sendable () -> String,
        clientKey: @escaping @Sendable () -> String,
        notificationKey: (@Sendable () -> String)? = nil
    ) {
        self.deviceToken = deviceToken
        self.deviceSecret = deviceSecret
        self.serverKey = serverKey
        self.clientKey = clientKey
        self.notificationKey = notificationKey ?? { NotificationKey.generate().rawValue }
    }

    /// The formats of the core module (``RegistrationToken``, ``Credentials``): one definition of what a token,
    /// a secret and a key look like, for the store and for the validation of incoming tokens alike.
    public static let `default` = CredentialGenerator(
        deviceToken: { RegistrationToken.generate().rawValue },
        deviceSecret: { Credentials.deviceSecret() },
        serverKey: { Credentials.serverKey() },
        clientKey: { Credentials.clientKey() }
    )
}
