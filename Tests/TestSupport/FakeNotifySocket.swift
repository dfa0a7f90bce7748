import Foundation

/// A stand-in for systemd's notification socket: a bound Unix datagram socket that the test reads from.
public final class FakeNotifySocket: @unchecked Sendable {
    /// What to put in `NOTIFY_SOCKET`: a path, or `@name` for the abstract namespace.
    public let address: String
    private let fd: Int32

    /// Binds a socket at a fresh path under /tmp, or with `abstract`, a fresh abstract name.
    public init(abstract: Bool = false) {
        let name = "pushrelay-notify-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        address = abstract ? "@" + name : "/tmp/" + name + ".sock"
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        precondition(fd >= 0, "socket failed")
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(address.utf8)
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: bytes) }
        let length = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + bytes.count + (abstract ? 0 : 1)
        let result = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(length)) }
        }
        precondition(result == 0, "bind \(address) failed: errno \(errno)")
    }

    /// The next datagram's text, or `nil` after `timeoutMilliseconds` (default 10 s) without one.
    public func receive(timeoutMilliseconds: Int32 = 10_000) -> String? {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, timeoutMilliseconds) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// The next datagram's text, or `nil` after `timeoutMilliseconds` (default 60 s) without one.
    ///
    /// The blocking wait runs on a Dispatch thread, not on the cooperative pool: the service under test needs a
    /// pool thread to send what is awaited, and on a two-core machine other tests may hold the rest.
    public func next(timeoutMilliseconds: Int32 = 60_000) async -> String? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: self.receive(timeoutMilliseconds: timeoutMilliseconds))
            }
        }
    }

    private let collected = NSLock()
    private var collectedMessages: [String] = []
    private var collecting = false

    /// Starts reading every datagram on a thread of its own (not the cooperative pool, which other tests may hold),
    /// as systemd does: a Unix datagram socket queues only `net.unix.max_dgram_qlen` messages (10 on some
    /// machines), and what a slow reader leaves queued crowds out what comes next. ``messages`` has them in order.
    public func startCollecting() {
        collected.withLock { collecting = true }
        let thread = Thread { [self] in
            while collected.withLock({ collecting }) {
                if let message = receive(timeoutMilliseconds: 100) {
                    collected.withLock { collectedMessages.append(message) }
                }
            }
        }
        thread.start()
    }

    /// Stops the thread ``startCollecting()`` started (within 100 ms).
    public func stopCollecting() {
        collected.withLock { collecting = false }
    }

    /// What the collecting thread has read so far, in order.
    public var messages: [String] { collected.withLock { collectedMessages } }

    deinit {
        close(fd)
        if !address.hasPrefix("@") { unlink(address) }
    }
}
