import PushWorkerCore

/// One point of the status page's history (`samples[]` in `/status.json`): rates over the interval since
/// the previous sample, and the gauges at its end. docs/operations.md, "Status page", lists the fields.
struct StatusSample: Sendable, Equatable, Codable {
    /// When it was taken: milliseconds since 1970 (UTC).
    var t: Int64
    /// Records taken from the input topics per second.
    var recordsPerSecond: Double
    /// Results acknowledged per second, by `type/result` (`(none)` for a payload without a type).
    var resultsPerSecond: [String: Double]
    /// Worker run times in seconds of the jobs that finished in the interval, by type: estimated from
    /// `pushworker_worker_duration_seconds`'s buckets (types that ran nothing are left out).
    var durationSeconds: [String: Percentiles]
    /// Records behind the end of each assigned partition, by `topic[partition]`.
    var lag: [String: Double]
    /// Jobs running now by type (`(none)` for records without one).
    var running: [String: Int]
    /// Jobs waiting for a slot or their key now, by type.
    var waiting: [String: Int]
    /// How long the oldest running job has run, in seconds (0 when none runs).
    var oldestRunningSeconds: Double
    /// Results (and dead letters) waiting for the broker's acknowledgement.
    var resultsWaiting: Double
    /// Dead letters acknowledged since the service started.
    var deadLetters: Double
    /// Rebalance events (assigned, revoked, lost) since the service started.
    var rebalances: Double
    /// Partitions assigned to this member.
    var assignedPartitions: Int

    /// The 50th, 90th and 99th percentiles of worker run times, in seconds.
    struct Percentiles: Sendable, Equatable, Codable {
        var p50: Double
        var p90: Double
        var p99: Double
    }

    /// The type key of the page for a payload type (`(none)` when there is none).
    static func typeKey(_ type: String?) -> String {
        guard let type, !type.isEmpty else { return "(none)" }
        return type
    }

    /// The sample of the interval from `previous` to `current`, with the dispatcher's load and the
    /// assignment at its end. Counters that went backwards (a new metrics registry) count as 0.
    init(from previous: MetricsReading, to current: MetricsReading, load: [JobDispatcher.TypeLoad], assignedPartitions: Int) {
        let seconds = max(0.001, Double(current.atMs - previous.atMs) / 1000)
        func rate(_ now: Double, _ before: Double) -> Double { max(0, now - before) / seconds }
        t = current.atMs
        recordsPerSecond = rate(current.recordsConsumed, previous.recordsConsumed)
        resultsPerSecond = current.results.reduce(into: [:]) { rates, entry in
            rates[entry.key] = rate(entry.value, previous.results[entry.key] ?? 0)
        }
        var durations: [String: Percentiles] = [:]
        for (type, buckets) in current.durationBuckets {
            let before = previous.durationBuckets[type] ?? []
            let delta = buckets.map { bucket in
                (upperBound: bucket.upperBound,
                 cumulative: max(0, bucket.cumulative - (before.first { $0.upperBound == bucket.upperBound }?.cumulative ?? 0)))
            }
            guard let p50 = HistogramQuantile.estimate(0.5, buckets: delta),
                  let p90 = HistogramQuantile.estimate(0.9, buckets: delta),
                  let p99 = HistogramQuantile.estimate(0.99, buckets: delta) else { continue }
            durations[Self.typeKey(type)] = Percentiles(p50: p50, p90: p90, p99: p99)
        }
        durationSeconds = durations
        lag = current.lag
        var running: [String: Int] = [:]
        var waiting: [String: Int] = [:]
        var oldest = Duration.zero
        for entry in load {
            running[Self.typeKey(entry.type), default: 0] += entry.running
            waiting[Self.typeKey(entry.type), default: 0] += entry.waiting
            if let age = entry.oldestRunningAge { oldest = max(oldest, age) }
        }
        self.running = running
        self.waiting = waiting
        oldestRunningSeconds = Double(oldest.wholeMilliseconds) / 1000
        resultsWaiting = current.resultsWaiting
        deadLetters = current.deadLetters
        rebalances = current.rebalances
        self.assignedPartitions = assignedPartitions
    }
}
