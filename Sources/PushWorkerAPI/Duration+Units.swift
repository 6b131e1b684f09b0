extension Duration {
    /// The duration in seconds, for Foundation's `TimeInterval` APIs.
    package var timeInterval: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration in whole milliseconds (truncated toward zero), saturating at `Int64.min` / `Int64.max`
    /// instead of trapping (a Swift caller's duration may be any size).
    package var wholeMilliseconds: Int64 {
        // Compared before `components`, which traps beyond Int64 seconds (e.g. `.seconds(1e20)`).
        if self >= .milliseconds(Int64.max) { return .max }
        if self <= .milliseconds(Int64.min) { return .min }
        let (seconds, attoseconds) = components  // same sign, so the sum stays within the bounds checked
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// The duration in whole nanoseconds (truncated toward zero), saturating at `Int64.min` / `Int64.max`.
    package var wholeNanoseconds: Int64 {
        if self >= .nanoseconds(Int64.max) { return .max }
        if self <= .nanoseconds(Int64.min) { return .min }
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
