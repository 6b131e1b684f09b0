import Foundation

/// Wall-clock helpers: UNIX milliseconds and RFC 3339 timestamps.
public enum WallClock {
    /// Now, in milliseconds since the UNIX epoch.
    @inline(__always)
    public static func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// The monotonic clock (`CLOCK_MONOTONIC`) in nanoseconds: for heartbeats and ages, never for dates.
    @inline(__always)
    public static func monotonicNs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// The wall-clock time, in UNIX milliseconds, of a monotonic instant; saturates at `Int64.min`/`Int64.max`
    /// for instants beyond them (a huge budget set from Swift never traps).
    public static func wallMs(at instant: ContinuousClock.Instant) -> Int64 {
        let (sum, overflow) = nowMs().addingReportingOverflow(ContinuousClock.now.duration(to: instant).wholeMilliseconds)
        guard overflow else { return sum }
        return instant > .now ? .max : .min
    }

    /// Formats UNIX milliseconds as RFC 3339 UTC with milliseconds, e.g. `2026-11-30T10:16:48.123Z`.
    public static func rfc3339(ms: Int64) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        appendRFC3339(ms: ms, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends UNIX milliseconds as RFC 3339 UTC with milliseconds (24 bytes) to `bytes`.
    public static func appendRFC3339(ms: Int64, to bytes: inout [UInt8]) {
        var seconds = time_t(ms >= 0 ? ms / 1000 : (ms - 999) / 1000)
        let millis = Int(ms - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        @inline(__always) func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                bytes.append(UInt8(truncatingIfNeeded: 0x30 + (rest / divisor) % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        digits(Int(parts.tm_year) + 1900, 4); bytes.append(0x2D)
        digits(Int(parts.tm_mon) + 1, 2); bytes.append(0x2D)
        digits(Int(parts.tm_mday), 2); bytes.append(0x54)
        digits(Int(parts.tm_hour), 2); bytes.append(0x3A)
        digits(Int(parts.tm_min), 2); bytes.append(0x3A)
        digits(Int(parts.tm_sec), 2); bytes.append(0x2E)
        digits(millis, 3); bytes.append(0x5A)
    }
}
