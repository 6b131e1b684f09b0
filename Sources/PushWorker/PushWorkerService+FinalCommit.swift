import Foundation
import PushWorkerCore
import PushWorkerKafka

extension PushWorkerService {
    /// How long the final commit is tried again while the group refuses it because it is rebalancing: 10 s.
    static let finalCommitRetryTimeout = Duration.seconds(10)

    /// Whether a commit refused with `error` may go through once the group's rebalance is over:
    /// `REBALANCE_IN_PROGRESS` (27) and `ILLEGAL_GENERATION` (22), the answers of a coordinator whose group
    /// is rebalancing or has moved on to a new generation.
    static func commitMayGoThroughAfterRebalance(_ error: any Error) -> Bool {
        guard let error = error as? KafkaError else { return false }
        return error.rdKafkaError == 27 || error.rdKafkaError == 22
    }

    /// The shutdown's commit of `offsets` (every member's stored offsets when empty). A group member leaving,
    /// joining or timing out while this process stops makes the coordinator refuse commits until the
    /// rebalance is over (librdkafka 2.0.2's embedded cluster refuses every commit for the whole wait,
    /// `session.timeout.ms` − 1 s): the commit is then tried again, serving the members (so that they take
    /// part in the rebalance) for up to ``finalCommitRetryTimeout``, unless a fast stop is requested.
    /// Records polled meanwhile (none while the assignment is paused) are not taken. Blocking: dedicated
    /// thread, after the consumer loop has ended.
    static func finalCommit(_ offsets: [TopicPartitionOffset], consumer: KafkaGroupMembers, logger: PushWorkerLogger, stopNow: () -> Bool) {
        let deadline = ContinuousClock.now.advanced(by: finalCommitRetryTimeout)
        var refused = 0
        while true {
            do {
                if offsets.isEmpty { try consumer.commit() } else { try consumer.commit(offsets) }
                if refused > 0 { logger.info("final commit went through after the group's rebalance", metadata: ["refused": String(refused)]) }
                return
            } catch where commitMayGoThroughAfterRebalance(error) && ContinuousClock.now < deadline && !stopNow() {
                refused += 1
                let until = ContinuousClock.now.advanced(by: .milliseconds(200))
                while ContinuousClock.now < until { _ = try? consumer.poll(timeoutMs: 50) }
            } catch {
                logger.warning("final commit failed", metadata: ["error": "\(error)"])
                return
            }
        }
    }
}
