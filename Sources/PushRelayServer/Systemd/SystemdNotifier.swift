#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Tells systemd about the daemon's state over `$NOTIFY_SOCKET` (the `sd_notify` protocol), without libsystemd.
///
/// Each message is one datagram of `KEY=VALUE` lines sent to the Unix datagram socket that systemd names in
/// `NOTIFY_SOCKET` (a path, or `@name` for the abstract namespace). Without `NOTIFY_SOCKET` (not started by systemd,
/// or `Type=` is not `notify`) every call does nothing, so the daemon calls it unconditionally.
///
/// Order in the daemon: ``ready(status:)`` once the listeners are up and the store is open; ``status(_:)`` whenever
/// there is something to say; ``watchdog()`` from ``SystemdWatchdogService``; ``reloading()`` then ``ready(status:)``
/// around a SIGHUP reload; ``stopping()`` when the SIGTERM drain starts.
public struct SystemdNotifier: Sendable {
    /// The socket address from `NOTIFY_SOCKET`, or `nil` when notifications are off.
    public let socketPath: String?

    /// The watchdog interval from `WATCHDOG_USEC` (when `WATCHDOG_PID` is unset or this process), or `nil`.
    public let watchdogInterval: Duration?

    /// A notifier configured from the environment (`NOTIFY_SOCKET`, `WATCHDOG_USEC`, `WATCHDOG_PID`).
    public init(environment: [String: String]) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        self.socketPath = path
        self.watchdogInterval = Self.watchdogInterval(environment: environment, pid: Int(getpid()))
    }

    /// A notifier sending to `socketPath` (a filesystem path or `@abstract-name`), e.g. for tests.
    public init(socketPath: String?, watchdogInterval: Duration? = nil) {
        self.socketPath = socketPath
        self.watchdogInterval = watchdogInterval
    }

    /// Whether notifications go anywhere (`NOTIFY_SOCKET` was set).
    public var isEnabled: Bool { socketPath != nil }

    /// `READY=1` (and a `STATUS=` line): startup finished, the listeners accept and the store is open.
    public func ready(status: String? = nil) throws(SystemdNotifierError) {
        try send(["READY=1"] + Self.statusLine(status))
    }

    /// `STATUS=…`: a one-line human-readable status that `systemctl status` shows.
    public func status(_ text: String) throws(SystemdNotifierError) {
        try send(Self.statusLine(text))
    }

    /// `WATCHDOG=1`: the daemon is alive. Needed at least every `WatchdogSec=` when the unit sets it.
    public func watchdog() throws(SystemdNotifierError) {
        try send(["WATCHDOG=1"])
    }

    /// `RELOADING=1` with `MONOTONIC_USEC=`: a SIGHUP reload started; send ``ready(status:)`` when it is done.
    public func reloading() throws(SystemdNotifierError) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let microseconds = Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000
        try send(["RELOADING=1", "MONOTONIC_USEC=\(microseconds)"])
    }

    /// `STOPPING=1`: the daemon started to shut down (drain).
    public func stopping(status: String? = nil) throws(SystemdNotifierError) {
        try send(["STOPPING=1"] + Self.statusLine(status))
    }

    /// Sends raw `KEY=VALUE` assignments as one datagram. Does nothing when notifications are off.
    public func send(_ assignments: [String]) throws(SystemdNotifierError) {
        guard let socketPath else { return }
        let message = assignments.joined(separator: "\n") + "\n"
        try Self.sendDatagram(message, to: socketPath)
    }

    private static func statusLine(_ status: String?) -> [String] {
        guard let status else { return [] }
        // One line only: a newline would start another assignment.
        return ["STATUS=" + String(status.map { $0.isNewline ? " " : $0 })]
    }

    /// `WATCHDOG_USEC` as a duration, unless `WATCHDOG_PID` names another process.
    static func watchdogInterval(environment: [String: String], pid: Int) -> Duration? {
        if let owner = environment["WATCHDOG_PID"], let ownerPID = Int(owner), ownerPID != pid {
            return nil
        }
        guard let text = environment["WATCHDOG_USEC"], let microseconds = Int64(text), microseconds > 0 else {
            return nil
        }
        return .microseconds(microseconds)
    }

    // MARK: The socket (the only C interop of this feature)

    private static func sendDatagram(_ message: String, to path: String) throws(SystemdNotifierError) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(path.utf8)
        if pathBytes.first == UInt8(ascii: "@") {
            pathBytes[0] = 0  // abstract namespace: a leading NUL, no terminator
        } else {
            guard pathBytes.first == UInt8(ascii: "/") else { throw .invalidSocketPath(path) }
        }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { throw .invalidSocketPath(path) }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: pathBytes)
        }
        let isAbstract = pathBytes.first == 0
        let addressLength = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + pathBytes.count
            + (isAbstract ? 0 : 1)

        #if canImport(Glibc)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let fd = socket(AF_UNIX, SOCK_DGRAM, 0)
        #endif
        guard fd >= 0 else { throw .socketFailed(errno: errno) }
        defer { close(fd) }

        // MSG_DONTWAIT: a notification never blocks the daemon; a full queue (a manager that stopped reading) is an
        // error the caller logs, not a stalled thread.
        let bytes = Array(message.utf8)
        let sent = bytes.withUnsafeBytes { payload in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    sendto(fd, payload.baseAddress, payload.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), socketAddress,
                           socklen_t(addressLength))
                }
            }
        }
        guard sent == bytes.count else { throw .sendFailed(errno: errno, path: path) }
    }
}

/// A notification could not be sent.
public struct SystemdNotifierError: Error, Sendable, CustomStringConvertible {
    private enum Code: Sendable {
        case invalidSocketPath(String)
        case socketFailed(Int32)
        case sendFailed(Int32, String)
    }

    private let code: Code

    static func invalidSocketPath(_ path: String) -> Self { Self(code: .invalidSocketPath(path)) }
    static func socketFailed(errno: Int32) -> Self { Self(code: .socketFailed(errno)) }
    static func sendFailed(errno: Int32, path: String) -> Self { Self(code: .sendFailed(errno, path)) }

    /// What failed, with the system's reason.
    public var description: String {
        switch code {
        case .invalidSocketPath(let path):
            "NOTIFY_SOCKET '\(path)' is neither an absolute path nor an @abstract name, or is too long"
        case .socketFailed(let error):
            "cannot create the notification socket: \(String(cString: strerror(error)))"
        case .sendFailed(let error, let path):
            "cannot notify systemd at \(path): \(String(cString: strerror(error)))"
        }
    }
}
