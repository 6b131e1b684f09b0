import Foundation
import PushWorkerCore
import PushWorkerKafka

extension PushWorkerService {
    /// How long the final commit waits for the group to finish a rebalance that refuses it: 10 s.
    static let finalCommitRetryTimeout = Duration.seconds(10)

    /// Whether a commit refused with `error` may go through once the group's rebalance is over:
    /// `REBALANCE_IN_PROGRESS` (27) and `ILLEGAL_GENERATION` (22), the answers of a coordinator whose group
    /// is rebalancing or has moved on to a new generation.
    static func commitMayGoThroughAfterRebalance(_ error: any Error) -> Bool {
        guard let error = error as? KafkaError else { return false }
        return error.rdKafkaError == 27 || error.rdKafkaError == 22
    }

    /// One member's part of the final commit.
    private struct FinalCommitPart {
        let member: KafkaConsumer
        /// The offsets to commit, or `nil` for the member's stored offsets.
        let offsets: [TopicPartitionOffset]?
        /// After a refusal: the member's ``KafkaConsumer/rebalancesServed`` then. The part is tried again
        /// only once the member has served a rebalance callback since.
        var refusedAt: Int?
    }

    /// The shutdown's commit of `offsets` (every member's stored offsets when empty), member by member.
    ///
    /// A group member leaving, joining or timing out while this process stops makes the coordinator refuse
    /// commits until the rebalance is over. A refused member's commit is tried again only after the member
    /// has served a rebalance callback, i.e. has joined the group's new generation (with
    /// `cooperative-sticky` every rebalance ends in an assignment, an empty one included), and then only for
    /// the partitions the member still holds: partitions revoked meanwhile had their offsets committed by
    /// the revocation, lost ones must not be committed. Trying again at once would do harm: a commit sent
    /// while the member's own JoinGroup is pending waits behind it and comes back `ILLEGAL_GENERATION`,
    /// which librdkafka 2.0.2 takes for a lost assignment (seen on the embedded cluster, whose rebalances
    /// after the first wait `session.timeout.ms` − 1 s). The members are served meanwhile (so that they
    /// take part in the rebalance) for up to ``finalCommitRetryTimeout``, unless a fast stop is requested.
    /// Records polled meanwhile (none while the assignment is paused) are not taken. Blocking: dedicated
    /// thread, after the consumer loop has ended.
    static func finalCommit(_ offsets: [TopicPartitionOffset], consumer: KafkaGroupMembers, logger: PushWorkerLogger, stopNow: () -> Bool) {
        let deadline = ContinuousClock.now.advanced(by: finalCommitRetryTimeout)
        var pending: [FinalCommitPart] = offsets.isEmpty
            ? consumer.members.map { FinalCommitPart(member: $0, offsets: nil) }
            : consumer.byMember(offsets, topic: \.topicPartition.topic).map { FinalCommitPart(member: $0.0, offsets: $0.1) }
        var refused = 0
        while true {
            var waiting: [FinalCommitPart] = []
            for var part in pending {
                if let mark = part.refusedAt, part.member.rebalancesServed == mark {
                    waiting.append(part)
                    continue
                }
                do {
                    if let own = part.offsets {
                        if part.refusedAt == nil {
                            try part.member.commit(own)
                        } else {
                            let held = Set(part.member.assignment())
                            try part.member.commit(own.filter { held.contains($0.topicPartition) })
                        }
                    } else {
                        try part.member.commit()
                    }
                } catch where commitMayGoThroughAfterRebalance(error) {
                    refused += 1
                    part.refusedAt = part.member.rebalancesServed
                    waiting.append(part)
                } catch {
                    logger.warning("final commit failed", metadata: ["error": "\(error)"])
                }
            }
            pending = waiting
            if pending.isEmpty {
                if refused > 0 { logger.info("final commit went through after the group's rebalance", metadata: ["refused": String(refused)]) }
                return
            }
            if ContinuousClock.now >= deadline || stopNow() {
                logger.warning("final commit failed: the group was still rebalancing; the records after the last commit will be read again", metadata: ["refused": String(refused)])
                return
            }
            let until = ContinuousClock.now.advanced(by: .milliseconds(200))
            while ContinuousClock.now < until { _ = try? consumer.poll(timeoutMs: 50) }
        }
    }
}
