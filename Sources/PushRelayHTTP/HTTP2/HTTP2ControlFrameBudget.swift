import NIOCore

/// The allowance of HTTP/2 frames that ask the server for no work (PING, SETTINGS, WINDOW_UPDATE, PRIORITY, an
/// empty DATA frame): a token bucket of `burst` frames refilled at `ratePerSecond`, plus two for every request the
/// client opens. A connection that spends it all is flooding and is closed.
///
/// nghttp2 bounds the acknowledgements such frames make it queue, not the frames themselves: a client that reads
/// its acknowledgements, or sends frames that need none, could otherwise keep an event loop busy for nothing.
struct HTTP2ControlFrameBudget {
    private let burst: Int
    private let ratePerSecond: Int
    private var tokens: Int
    private var refilledAt: NIODeadline

    init(burst: Int, ratePerSecond: Int, now: NIODeadline = .now()) {
        self.burst = max(burst, 1)
        self.ratePerSecond = max(ratePerSecond, 0)
        self.tokens = self.burst
        self.refilledAt = now
    }

    /// Spends one token; `false` when none is left even after refilling for the time passed (a flood). The clock
    /// is read only when the bucket runs dry.
    mutating func spend(now: @autoclosure () -> NIODeadline = .now()) -> Bool {
        if tokens > 0 {
            tokens -= 1
            return true
        }
        let now = now()
        let elapsed = max(0, (now - refilledAt).nanoseconds)
        let refill = Int(min(Int64(burst), elapsed / 1_000_000 * Int64(ratePerSecond) / 1000))
        guard refill > 0 else { return false }
        tokens = refill - 1
        refilledAt = now
        return true
    }

    /// A request was opened: it earns the client two frames (a WINDOW_UPDATE for its response, a PRIORITY).
    mutating func earn() {
        tokens = min(burst, tokens + 2)
    }
}
