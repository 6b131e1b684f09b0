import PushWorkerCore
import PushWorkerKafka

/// Takes the status page's samples on a timer: every ``StatusPageConfiguration/sampleInterval`` it reads
/// the service's metrics (as a scrape does), the dispatcher's jobs by type and the assignment into the
/// ``StatusBoard``, then sets `pushworker_group_balance_flags` from the board's view of the group
/// (``GroupBalance``). Nothing on the per-record path.
enum StatusSampler {
    /// Samples until the task running it is cancelled.
    static func run(board: StatusBoard, metrics: ServiceMetrics, dispatcher: JobDispatcher, consumer: KafkaGroupMembers, interval: Duration) async {
        while !Task.isCancelled {
            let reading = MetricsReading(metrics.registry.snapshot(), atMs: WallClock.nowMs())
            board.takeSample(reading, load: dispatcher.loadByType(), assignment: metrics.assigned, memberId: consumer.memberId,
                             partitionCounts: metrics.knownPartitionCounts)
            metrics.groupBalance(board.balance())
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
        }
    }
}
