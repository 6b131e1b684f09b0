#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The monotonic clock (`CLOCK_MONOTONIC`) in nanoseconds, cheap enough for per-round heartbeats.
enum MonotonicClock {
    @inline(__always)
    static func nowNs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
