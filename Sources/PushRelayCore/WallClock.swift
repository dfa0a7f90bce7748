#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The wall clock in the unit of ``MessageID``s.
public enum WallClock {
    /// Microseconds since the Unix epoch (`CLOCK_REALTIME`).
    public static func microsecondsSinceEpoch() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000 &+ UInt64(spec.tv_nsec / 1000)
    }
}
