import Foundation

/// Wall-clock helpers: UNIX milliseconds and RFC 3339 timestamps.
public enum Clock {
    /// Now, in milliseconds since the UNIX epoch.
    @inline(__always)
    public static func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// The wall-clock time, in UNIX milliseconds, of a monotonic instant.
    public static func wallMs(at instant: ContinuousClock.Instant) -> Int64 {
        let offset = ContinuousClock.now.duration(to: instant)
        let (seconds, attoseconds) = offset.components
        return nowMs() + seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Formats UNIX milliseconds as RFC 3339 UTC with milliseconds, e.g. `2026-11-30T10:16:48.123Z`.
    public static func rfc3339(ms: Int64) -> String {
        var seconds = time_t(ms >= 0 ? ms / 1000 : (ms - 999) / 1000)
        let millis = Int(ms - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }
}
