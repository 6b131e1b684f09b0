import Foundation
import PushWorker
import PushWorkerCore
import PushWorkerKafka
import PushWorkerTesting
import Synchronization
import Testing

/// The first-join hold (`ConsumerLoop.firstJoinHoldLimit`): while one of the process's group members (one
/// per topic) has no first assignment yet, the partitions the others were given are not read, so nothing
/// is stored or committed during the rebalance the late member brings, and no assignment is lost to a
/// commit sent while a JoinGroup is pending (librdkafka issue #4059).
@Suite(.timeLimit(.minutes(3)))
struct FirstJoinHoldTests {
    /// The second JoinGroup the cluster receives is answered 4 s late, so that member misses the group's
    /// first generation (the embedded cluster elects after 3 s) and joins with a second rebalance
    /// (`session.timeout.ms` − 1 s = 5 s). Which member sends the second JoinGroup is up to the scheduler;
    /// the case that shows the hold is the input member assigned while the retry member is not: the run is
    /// repeated (a new cluster each time) until it has been seen.
    @Test func recordsAreTakenOnlyOnceEveryMemberOfTheProcessHasItsFirstAssignment() async throws {
        var seen = false
        for attempt in 0..<6 where !seen {
            var registry = WorkerRegistry()
            registry.register(type: "fast", worker: NoopWorker(outcome: .newData))
            let harness = try await PushWorkerTestHarness.start(registry: registry, partitions: 2, configure: { $0.memberPerTopic = true }, beforeStart: { cluster in
                try cluster.pushRequestErrors(brokerId: 1, apiKey: 11, errors: [(error: 0, rttMs: 0), (error: 0, rttMs: 4000)])
            })
            var ends: [Int32: Int64] = [:]
            for index in 0..<6 {
                let at = try await harness.produce(#"{"aps":{"content-available":1},"type":"fast"}"#, partition: Int32(index % 2))
                ends[at.topicPartition.partition] = at.offset + 1
            }
            let input = harness.configuration.inputTopics[0]
            let retry = harness.configuration.retries.topic
            // Sampled until both members hold partitions: while only the input member does, nothing is taken.
            let deadline = ContinuousClock.now.advanced(by: .seconds(40))
            var takenWhileHeld = 0
            while ContinuousClock.now < deadline {
                let statistics = harness.service.currentStatistics
                let topics = Set(statistics.assignedPartitions.map(\.topic))
                if topics.contains(input) && topics.contains(retry) { break }
                if topics == [input] {
                    seen = true
                    takenWhileHeld = max(takenWhileHeld, statistics.recordsConsumed)
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(takenWhileHeld == 0, "records taken while the retry member had no assignment (attempt \(attempt))")
            let results = try await harness.results(count: 6, timeout: .seconds(40))
            #expect(results.count == 6)
            try await harness.stop()
            // Nothing lost to the rebalance: every offset committed by the stop.
            #expect(try await harness.committedOffsets() == ends, "attempt \(attempt)")
            try await DedicatedThread.run(name: "first-join-cluster-stop") { harness.cluster.shutdown() }
        }
        #expect(seen, "the input member was never seen assigned before the retry member")
    }
}
