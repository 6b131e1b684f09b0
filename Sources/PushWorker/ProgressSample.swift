import PushWorkerCore
import PushWorkerMetrics

/// What the progress line reads from one snapshot of the service's metrics (``ServiceMetrics``): the same
/// numbers `/metrics` shows, so the line needs no bookkeeping of its own on the hot path.
struct ProgressSample: Sendable, Equatable {
    /// `pushworker_records_consumed_total`.
    var recordsConsumed: Double = 0
    /// `pushworker_results_total` summed by its `result` label (newData, noData, failed).
    var results: [BackgroundFetchResult: Double] = [:]
    /// `pushworker_consumer_lag` summed over its partitions, or `nil` while it has no series (no librdkafka
    /// statistics yet, or statistics off: `statistics.interval.ms` is 0 when the HTTP server is disabled).
    var consumerLag: Double?
    /// `pushworker_jobs_in_flight`: workers running now.
    var runningJobs: Double = 0
    /// `pushworker_results_waiting`: results produced but not yet acknowledged, plus the backlog.
    var resultsWaiting: Double = 0
    /// `pushworker_assigned_partitions`.
    var assignedPartitions: Double = 0

    /// The metric names read.
    enum Name {
        static let recordsConsumed = "pushworker_records_consumed_total"
        static let results = "pushworker_results_total"
        static let consumerLag = "pushworker_consumer_lag"
        static let runningJobs = "pushworker_jobs_in_flight"
        static let resultsWaiting = "pushworker_results_waiting"
        static let assignedPartitions = "pushworker_assigned_partitions"
    }

    /// An empty sample (every figure 0, lag unknown).
    init() {}

    /// Reads a sample from `snapshots` (``MetricsRegistry/snapshot()``). Metrics it does not know are ignored;
    /// a `result` label that is not an outcome is ignored too.
    init(_ snapshots: [MetricSnapshot]) {
        for snapshot in snapshots {
            switch snapshot.name {
            case Name.recordsConsumed: recordsConsumed = Self.sum(snapshot)
            case Name.runningJobs: runningJobs = Self.sum(snapshot)
            case Name.resultsWaiting: resultsWaiting = Self.sum(snapshot)
            case Name.assignedPartitions: assignedPartitions = Self.sum(snapshot)
            case Name.consumerLag: consumerLag = snapshot.samples.isEmpty ? nil : Self.sum(snapshot)
            case Name.results:
                for sample in snapshot.samples {
                    guard let label = sample.labels.first(where: { $0.name == "result" }),
                          let outcome = BackgroundFetchResult(rawValue: label.value) else { continue }
                    results[outcome, default: 0] += sample.value
                }
            default: continue
            }
        }
    }

    private static func sum(_ snapshot: MetricSnapshot) -> Double {
        snapshot.samples.reduce(0) { $0 + $1.value }
    }
}
