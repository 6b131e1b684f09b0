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
    ///
    /// Pure arithmetic on the proleptic Gregorian calendar (the days-to-civil conversion of
    /// `gmtime`), so it takes no lock: glibc's `gmtime_r` takes the process-wide time-zone lock on every
    /// call, and a result writes three timestamps. Years are written with four digits (0000–9999).
    public static func appendRFC3339(ms: Int64, to bytes: inout [UInt8]) {
        let seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
        let millis = Int(ms - seconds * 1000)
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = civil(fromDays: days)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { buffer in
            @inline(__always) func put(_ value: Int, _ width: Int, at index: Int) {
                var rest = value
                for position in stride(from: index + width - 1, through: index, by: -1) {
                    buffer[position] = UInt8(truncatingIfNeeded: 0x30 + rest % 10)
                    rest /= 10
                }
            }
            put(Int(((year % 10_000) + 10_000) % 10_000), 4, at: 0); buffer[4] = 0x2D
            put(month, 2, at: 5); buffer[7] = 0x2D
            put(day, 2, at: 8); buffer[10] = 0x54
            put(secondOfDay / 3600, 2, at: 11); buffer[13] = 0x3A
            put(secondOfDay / 60 % 60, 2, at: 14); buffer[16] = 0x3A
            put(secondOfDay % 60, 2, at: 17); buffer[19] = 0x2E
            put(millis, 3, at: 20); buffer[23] = 0x5A
            bytes.append(contentsOf: UnsafeBufferPointer(buffer))
        }
    }

    /// The proleptic Gregorian (year, month 1–12, day 1–31) of `days` since 1970-01-01, by eras of 400
    /// years (146 097 days), each counted from March so that the leap day ends the year.
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int, day: Int) {
        let shifted = days + 719_468  // days from 0000-03-01
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097  // 0...146096
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365  // 0...399
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)  // 0...365, from March
        let monthFromMarch = (5 * dayOfYear + 2) / 153  // 0...11
        let day = Int(dayOfYear - (153 * monthFromMarch + 2) / 5 + 1)
        let month = Int(monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9)
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
