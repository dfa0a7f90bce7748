import Foundation

/// Where a ``PostgresStore`` connects: a `postgres://` URL, as libpq writes it.
///
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`; `?host=/run/postgresql` (a directory) connects through the
/// Unix socket `<dir>/.s.PGSQL.<port>` instead of TCP. `sslmode=disable` (the default here) is the only mode this
/// build speaks: keep the database on loopback, a private network or a Unix socket. `?application_name=NAME` names
/// the node's sessions in `pg_stat_activity` and PostgreSQL's logs (default `pushrelay`; give each node its own to tell
/// which one holds a lock). The URL is a secret: its ``description`` masks the password.
public struct PostgresURL: Sendable, Hashable, CustomStringConvertible {
    /// The user name (default `postgres`).
    public var user: String
    /// The password, if any.
    public var password: String?
    /// The host name or address for TCP, nil with a Unix socket.
    public var host: String?
    /// The TCP port, also the number in the socket's file name (default 5432).
    public var port: Int
    /// The Unix socket directory, when `?host=/dir` was given.
    public var socketDirectory: String?
    /// The database (default: the user name).
    public var database: String
    /// What every connection of the store sends PostgreSQL as `application_name` (default `pushrelay`): printable
    /// ASCII, 1 to 63 bytes (PostgreSQL keeps no more).
    public var applicationName: String

    /// The `application_name` when the URL names none.
    public static let defaultApplicationName = "pushrelay"

    /// The Unix socket path, when connecting through one.
    public var socketPath: String? {
        self.socketDirectory.map { ($0.hasSuffix("/") ? $0 : $0 + "/") + ".s.PGSQL.\(self.port)" }
    }

    /// Parses a URL; throws ``StoreError/Code/invalidArgument`` with the reason (never the password).
    public init(_ text: String) throws(StoreError) {
        guard text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") else {
            throw StoreError.invalidArgument("a PostgreSQL URL starts with postgres:// or postgresql://")
        }
        guard let components = URLComponents(string: text) else {
            throw StoreError.invalidArgument("the PostgreSQL URL is malformed")
        }
        self.user = components.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        self.password = components.password.flatMap { $0.removingPercentEncoding }
        let host = components.host.flatMap { $0.removingPercentEncoding } ?? ""
        self.host = host.isEmpty ? nil : host
        self.port = components.port ?? 5432
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        self.database = path.removingPercentEncoding.flatMap { $0.isEmpty ? nil : $0 } ?? self.user
        self.socketDirectory = nil
        self.applicationName = Self.defaultApplicationName
        for item in components.queryItems ?? [] {
            switch item.name {
            case "host":
                guard let value = item.value, value.hasPrefix("/") else {
                    throw StoreError.invalidArgument("?host= names a socket directory (an absolute path)")
                }
                self.socketDirectory = value
            case "sslmode":
                guard item.value == "disable" else {
                    throw StoreError.invalidArgument("sslmode=\(item.value ?? "") is not supported (only disable)")
                }
            case "user":
                self.user = item.value ?? self.user
            case "password":
                self.password = item.value
            case "application_name":
                let name = item.value ?? ""
                guard (1...63).contains(name.utf8.count), name.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
                    throw StoreError.invalidArgument("application_name is 1 to 63 printable ASCII characters")
                }
                self.applicationName = name
            default:
                throw StoreError.invalidArgument("unknown PostgreSQL URL parameter \(item.name)")
            }
        }
        if self.host == nil && self.socketDirectory == nil {
            self.host = "localhost"
        }
    }

    /// The URL with the password masked (`postgres://relay:****@db:5432/relay`): safe in logs.
    public var description: String {
        var text = "postgres://" + self.user
        if self.password != nil { text += ":****" }
        text += "@" + (self.host ?? "") + ":\(self.port)/" + self.database
        var parameters: [String] = []
        if let socketDirectory { parameters.append("host=" + socketDirectory) }
        if self.applicationName != Self.defaultApplicationName {
            parameters.append("application_name=" + self.applicationName)
        }
        if !parameters.isEmpty { text += "?" + parameters.joined(separator: "&") }
        return text
    }
}
