import Foundation
import PushWorker
import PushWorkerCore
import PushWorkerKafka
import PushWorkerTesting
import Testing

/// How promptly acknowledged offsets are committed: pushworker's `auto.commit.interval.ms` default, the
/// user's setting over it, and the final commit of a graceful stop, which does not wait for the timer.
@Suite(.timeLimit(.minutes(2)))
struct CommitIntervalTests {
    @Test func pushworkerCommitsEvery200MsUnlessTheUserSaysOtherwise() throws {
        let defaults = try ServiceConfiguration.load(json5: Data("{}".utf8), environment: [:])
        #expect(defaults.consumerProperties["auto.commit.interval.ms"] == "200")
        #expect(defaults.producerProperties["auto.commit.interval.ms"] == nil, "a consumer property only")
        let own = try ServiceConfiguration.load(json5: Data(#"{ consumer: { "auto.commit.interval.ms": 5000 } }"#.utf8), environment: [:])
        #expect(own.consumerProperties["auto.commit.interval.ms"] == "5000")
        let shared = try ServiceConfiguration.load(json5: Data(#"{ kafka: { "auto.commit.interval.ms": 1000 } }"#.utf8), environment: [:])
        #expect(shared.consumerProperties["auto.commit.interval.ms"] == "1000")
    }

    /// The timer never fires during the test (a 10-minute interval), or there is none (auto-commit off, so
    /// the unassign of `rd_kafka_consumer_close` commits nothing either): only the stop's own commit can.
    @Test(arguments: [["auto.commit.interval.ms": "600000"], ["enable.auto.commit": "false"]])
    func aGracefulStopCommitsEveryAcknowledgedOffsetWithoutWaitingForTheTimer(_ properties: [String: String]) async throws {
        var registry = WorkerRegistry()
        registry.register(type: "fast", worker: NoopWorker(outcome: .newData))
        let harness = try await PushWorkerTestHarness.start(registry: registry, partitions: 2) { configuration in
            for (name, value) in properties { configuration.consumer[name] = value }
        }
        var ends: [Int32: Int64] = [:]
        for index in 0..<6 {
            let at = try await harness.produce(#"{"aps":{"content-available":1},"type":"fast"}"#, partition: Int32(index % 2))
            ends[at.topicPartition.partition] = at.offset + 1
        }
        _ = try await harness.results(count: 6)
        let before = try await harness.committedOffsets()
        #expect(before.values.allSatisfy { $0 < 0 }, "nothing committed while running: \(before)")
        try await harness.stop()
        #expect(try await harness.committedOffsets() == ends)
        try await DedicatedThread.run(name: "commit-test-cluster-stop") { harness.cluster.shutdown() }
    }
}
