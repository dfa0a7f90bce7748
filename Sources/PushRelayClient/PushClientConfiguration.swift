public import Foundation

/// Everything a ``PushClient`` needs: where the relay is, who the device is, and how to behave on failures.
///
/// ```swift
/// var configuration = PushClientConfiguration(
///     serverURL: URL(string: "http://127.0.0.1:8080")!,
///     registration: .init(project: "shop", app: "br.com.siecola.shop", clientKey: clientKey))
/// configuration.credentialsFile = URL(filePath: "device.json")   // reuse the token across launches
/// ```
public struct PushClientConfiguration: Sendable {
    /// How the device registers: `POST /v1/register` with the project's client key.
    public struct Registration: Sendable, Hashable {
        /// The project name on the relay, e.g. `shop`.
        public var project: String
        /// The app's identifier, e.g. `br.com.siecola.shop`.
        public var app: String
        /// The platform reported to the relay. Default `linux`.
        public var platform: String
        /// The project's client key. Like Firebase's API key it ships inside apps and is not a secret.
        public var clientKey: String

        /// Creates a registration.
        public init(project: String, app: String, platform: String = "linux", clientKey: String) {
            self.project = project
            self.app = app
            self.platform = platform
            self.clientKey = clientKey
        }
    }

    /// The relay's base URL, `http://host:port` or `https://host:port`, optionally with a path prefix.
    public var serverURL: URL
    /// Relays of the same deployment to fail over to, in order, when ``serverURL`` cannot be reached (see
    /// ``FailoverTransport``); same scheme rules and the same path as ``serverURL``. Default none.
    public var fallbackServerURLs: [URL] = []
    /// ``serverURL`` followed by ``fallbackServerURLs``.
    public var serverURLs: [URL] { [serverURL] + fallbackServerURLs }
    /// How to register when there are no credentials yet. `nil` if the client starts from ``credentials``.
    public var registration: Registration?
    /// Credentials to start from (a stored token and secret). Take precedence over ``registration``.
    public var credentials: PushCredentials?
    /// A file to keep the credentials in: read at start when it exists, written after registering.
    public var credentialsFile: URL?
    /// Reconnection backoff. Default: ``BackoffPolicy``'s defaults (0.5 s doubling to 30 s, full jitter, unlimited
    /// attempts).
    public var backoff: BackoffPolicy
    /// A stream silent (no message, no heartbeat) for this long is declared dead and replaced. Default 60 s;
    /// keep it above twice the relay's heartbeat interval.
    public var heartbeatTimeout: Duration
    /// How long to wait for a connection (and, on the URLSession transport, for any answer that is not the stream).
    /// On HTTP/2 over cleartext, also how long a new connection's server has to show that it speaks HTTP/2 (its
    /// SETTINGS); its first answer then has the request timeout, as every later one. Default 10 s.
    public var connectTimeout: Duration
    /// How many recent message ids to remember for deduplication. Default 1024.
    public var deduplicationCapacity: Int
    /// A file to persist the deduplication window in, so that duplicates are recognised across restarts. Default
    /// `nil` (memory only; the window still survives reconnects).
    public var deduplicationFile: URL?

    /// Creates a configuration that registers with `registration` (unless ``credentialsFile`` already holds
    /// credentials).
    public init(serverURL: URL, registration: Registration) {
        self.init(serverURL: serverURL, registration: registration, credentials: nil)
    }

    /// Creates a configuration that starts from stored credentials.
    public init(serverURL: URL, credentials: PushCredentials) {
        self.init(serverURL: serverURL, registration: nil, credentials: credentials)
    }

    /// Creates a configuration with every field; at least one of `registration`, `credentials` and
    /// `credentialsFile` must be given before the client starts.
    public init(
        serverURL: URL,
        registration: Registration?,
        credentials: PushCredentials?,
        credentialsFile: URL? = nil,
        backoff: BackoffPolicy = BackoffPolicy(),
        heartbeatTimeout: Duration = .seconds(60),
        connectTimeout: Duration = .seconds(10),
        deduplicationCapacity: Int = 1024,
        deduplicationFile: URL? = nil
    ) {
        self.serverURL = serverURL
        self.registration = registration
        self.credentials = credentials
        self.credentialsFile = credentialsFile
        self.backoff = backoff
        self.heartbeatTimeout = heartbeatTimeout
        self.connectTimeout = connectTimeout
        self.deduplicationCapacity = deduplicationCapacity
        self.deduplicationFile = deduplicationFile
    }
}
