import PushWorkerMetrics

/// What the status page reads from the service's metrics at one moment (``ServiceMetrics/registry``'s
/// snapshot, as a scrape of `/metrics` sees it): the counters' totals and the gauges' values it plots.
/// Two readings make one ``StatusSample``.
struct MetricsReading: Sendable, Equatable {
    /// When it was read (``WallClock/nowMs()``).
    var atMs: Int64
    /// `pushworker_records_consumed_total`.
    var recordsConsumed = 0.0
    /// `pushworker_results_total` by ``outcomeKey(type:result:)``.
    var results: [String: Double] = [:]
    /// `pushworker_worker_duration_seconds_bucket` by `type`: upper bounds and cumulative counts.
    var durationBuckets: [String: [Bucket]] = [:]
    /// `pushworker_consumer_lag` by `topic[partition]`.
    var lag: [String: Double] = [:]
    /// `pushworker_results_waiting`.
    var resultsWaiting = 0.0
    /// `pushworker_dead_letters_total`, all series.
    var deadLetters = 0.0
    /// `pushworker_rebalances_total`, all events.
    var rebalances = 0.0

    /// One histogram bucket: its upper bound (`le`) and cumulative count.
    struct Bucket: Sendable, Equatable {
        var upperBound: Double
        var cumulative: Double
    }

    /// The key of a result series: `type/result`, `(none)` for a payload without a type.
    static func outcomeKey(type: String, result: String) -> String { "\(type.isEmpty ? "(none)" : type)/\(result)" }

    /// Reads the metrics the page plots from `snapshot`.
    init(_ snapshot: [MetricSnapshot], atMs: Int64) {
        self.atMs = atMs
        for metric in snapshot {
            switch metric.name {
            case "pushworker_records_consumed_total":
                recordsConsumed = metric.samples.reduce(0) { $0 + $1.value }
            case "pushworker_results_total":
                for sample in metric.samples {
                    let key = Self.outcomeKey(type: sample.label("type") ?? "", result: sample.label("result") ?? "")
                    results[key, default: 0] += sample.value
                }
            case "pushworker_worker_duration_seconds":
                for sample in metric.samples where sample.name.hasSuffix("_bucket") {
                    guard let type = sample.label("type"), let le = sample.label("le") else { continue }
                    let bound = le == "+Inf" ? Double.infinity : (Double(le) ?? .infinity)
                    durationBuckets[type, default: []].append(Bucket(upperBound: bound, cumulative: sample.value))
                }
            case "pushworker_consumer_lag":
                for sample in metric.samples {
                    lag["\(sample.label("topic") ?? "")[\(sample.label("partition") ?? "")]"] = sample.value
                }
            case "pushworker_results_waiting":
                resultsWaiting = metric.samples.first?.value ?? 0
            case "pushworker_dead_letters_total":
                deadLetters = metric.samples.reduce(0) { $0 + $1.value }
            case "pushworker_rebalances_total":
                rebalances = metric.samples.reduce(0) { $0 + $1.value }
            default:
                continue
            }
        }
        for (type, buckets) in durationBuckets { durationBuckets[type] = buckets.sorted { $0.upperBound < $1.upperBound } }
    }
}

extension MetricSnapshot.Sample {
    /// The value of the label `name`, or `nil`.
    func label(_ name: String) -> String? { labels.first { $0.name == name }?.value }
}
