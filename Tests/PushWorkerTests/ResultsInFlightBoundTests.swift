import Foundation
import PushWorkerCore
import PushWorkerKafka
@testable import PushWorker
import PushWorkerTesting
import Synchronization
import Testing

/// The consumer's thread does not run ahead of the broker's acknowledgements without bound: once
/// `ResultPublisher.maxInFlightRecords` results are handed to librdkafka and not yet reported,
/// `waitForRoom` waits for their delivery reports (on the embedded cluster, its answers delayed).
@Suite(.timeLimit(.minutes(1)))
struct ResultsInFlightBoundTests {
    @Test func waitForRoomWaitsUntilTheResultsInFlightFallBelowTheBound() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let topic = "results-\(UUID().uuidString.prefix(8).lowercased())"
        try cluster.createTopic(topic, partitions: 4)
        let tracker = OffsetTracker()
        let acknowledged = Atomic<Int>(0)
        let publisher = try ResultPublisher(
            properties: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers, "linger.ms": "5"]),
            resultsTopic: topic, tracker: tracker, logger: PushWorkerLogger(label: "test"), logHandler: { _ in },
            metrics: try ServiceMetrics(registeredTypes: []), storeOffsets: { _ in },
            onDelivered: { _ in acknowledged.add(1, ordering: .relaxed) }, onRetried: { _ in })
        let source = TopicPartition(topic: "pushes", partition: 0)
        publisher.own([source])
        // Every answer of the broker comes 400 ms late from now on: the first delivery reports arrive
        // after the whole batch below has been handed to librdkafka.
        try cluster.setBrokerRTT(1, rttMs: 400)
        let count = ResultPublisher.maxInFlightRecords + 4000
        tracker.track((0..<count).map { (source, Int64($0)) })
        publisher.submit((0..<count).map { offset in
            .result(ResultRecord(
                messageId: "m\(offset)", type: "content-update", result: .newData, reason: nil, detail: nil, worker: nil,
                source: RecordSource(topic: source.topic, partition: source.partition, offset: Int64(offset)),
                receivedAtMs: 0, startedAtMs: nil, finishedAtMs: 0, durationMs: 0), deadLetter: nil, retry: nil)
        })
        let (inFlightAfterWait, acknowledgedAfterWait) = try await DedicatedThread.run(name: "test-wait-for-room") { () -> (Int, Int) in
            publisher.waitForRoom(timeoutMs: 20_000)
            return (publisher.unacknowledged, acknowledged.load(ordering: .relaxed))
        }
        #expect(inFlightAfterWait < ResultPublisher.maxInFlightRecords, "returned with \(inFlightAfterWait) results unacknowledged")
        #expect(acknowledgedAfterWait > 0, "returned before any delivery report")
        try cluster.setBrokerRTT(1, rttMs: 0)
        #expect(await publisher.close(timeoutMs: 20_000) == 0, "every result acknowledged in the end")
        #expect(acknowledged.load(ordering: .relaxed) == count)
        try await DedicatedThread.run(name: "test-cluster-stop") { cluster.shutdown() }
    }
}
