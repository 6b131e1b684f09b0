import PushWorkerCore

/// The periodic progress log line (``ServiceConfiguration/progressLogInterval``): a pure function of two
/// metric samples and the time between them.
enum ProgressLine {
    /// The line's message.
    static let message = "progress"

    /// The line's metadata, from the sample taken at the start of the interval (`previous`, an empty sample
    /// at the service's start) and the one at its end (`current`), `elapsed` apart:
    /// - `recordsPerSecond`: records consumed in the interval divided by its length, one decimal;
    /// - `newData`, `noData`, `failed`: results acknowledged in the interval, by outcome;
    /// - `consumerLag`: the sum of every assigned partition's lag now, `unknown` without librdkafka statistics;
    /// - `runningJobs`, `resultsWaiting` (for delivery), `assignedPartitions`: now;
    /// - `intervalSeconds`: the interval's length, one decimal.
    ///
    /// Counters that went down (a new registry) count from zero; a zero or negative `elapsed` gives 0 records/s.
    static func metadata(previous: ProgressSample, current: ProgressSample, elapsed: Duration) -> [String: String] {
        let seconds = Double(elapsed.wholeMilliseconds) / 1000
        let consumed = increase(from: previous.recordsConsumed, to: current.recordsConsumed)
        var metadata = [
            "recordsPerSecond": decimal(seconds > 0 ? consumed / seconds : 0),
            "consumerLag": current.consumerLag.map(whole) ?? "unknown",
            "runningJobs": whole(current.runningJobs),
            "resultsWaiting": whole(current.resultsWaiting),
            "assignedPartitions": whole(current.assignedPartitions),
            "intervalSeconds": decimal(max(0, seconds)),
        ]
        for outcome in BackgroundFetchResult.allCases {
            metadata[outcome.rawValue] = whole(increase(from: previous.results[outcome] ?? 0, to: current.results[outcome] ?? 0))
        }
        return metadata
    }

    private static func increase(from previous: Double, to current: Double) -> Double {
        current >= previous ? current - previous : current
    }

    /// A count as an integer (`1520`), saturating; 0 for NaN.
    static func whole(_ value: Double) -> String {
        guard value.isFinite else { return value.isNaN ? "0" : (value > 0 ? String(Int64.max) : String(Int64.min)) }
        return String(saturating(value.rounded()))
    }

    /// A rate with one decimal (`412.5`); 0 for NaN.
    static func decimal(_ value: Double) -> String {
        guard value.isFinite else { return value.isNaN ? "0" : whole(value) }
        let tenths = saturating((value * 10).rounded())
        let sign = tenths < 0 ? "-" : ""
        return "\(sign)\(tenths.magnitude / 10).\(tenths.magnitude % 10)"
    }

    /// `value` rounded toward zero, saturating at Int64's bounds.
    private static func saturating(_ value: Double) -> Int64 {
        if value >= 9.2e18 { return .max }
        if value <= -9.2e18 { return .min }
        return Int64(value)
    }
}
