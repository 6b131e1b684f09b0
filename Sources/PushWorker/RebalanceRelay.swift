import Synchronization
import PushWorkerKafka

/// Lets the consumer's rebalance callback reach the loop created after the consumer.
///
/// `@unchecked Sendable`: `handler` is set before `subscribe` (so before any rebalance can happen) and
/// cleared after the consumer is closed (after the last rebalance).
final class RebalanceRelay: @unchecked Sendable {
    var handler: (@Sendable (KafkaRebalanceEvent) -> Void)?
}

/// True the first time it is asked, false after (for a log line written once).
final class JoinedOnce: Sendable {
    private let done = Atomic<Bool>(false)

    /// Whether this is the first call.
    func first() -> Bool { !done.exchange(true, ordering: .acquiringAndReleasing) }
}
