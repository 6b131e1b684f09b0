import Foundation
import PushWorkerKafka
import Testing

/// The embedded cluster's fault injection (librdkafka 2.0.2's mock) and the producer's topic preparation.
@Suite(.timeLimit(.minutes(1)))
struct EmbeddedClusterFaultTests {
    static let notLeader: Int32 = 6  // NOT_LEADER_FOR_PARTITION

    @Test func brokerRequestErrorsAreUsedOneRequestEachAndCounted() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let topic = KafkaClientTests.uniqueName("errors")
        try cluster.createTopic(topic, partitions: 1)
        let producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers, "retry.backoff.ms": "10"]))
        #expect(try await DedicatedThread.run(name: "prepare") { try producer.prepareTopic(topic, timeoutMs: 5000) } == 1)
        try cluster.pushRequestErrors(brokerId: 1, apiKey: 0, errors: [(Self.notLeader, 0), (Self.notLeader, 50)])
        #expect(try cluster.requestErrorsLeft(brokerId: 1, apiKey: 0) == 2)
        // librdkafka retries a Produce answered NOT_LEADER_FOR_PARTITION: the record arrives, after both errors.
        let report = try await producer.send(KafkaOutgoingRecord(topic: topic, value: [1]))
        #expect(report.error == nil)
        #expect(try cluster.requestErrorsLeft(brokerId: 1, apiKey: 0) == 0)
        #expect(throws: KafkaError.self) { try cluster.pushRequestErrors(brokerId: 9, apiKey: 0, errors: [(Self.notLeader, 0)]) }
        #expect(throws: KafkaError.self) { try cluster.requestErrorsLeft(brokerId: 9, apiKey: 0) }
        await producer.close()
        try await KafkaClientTests.shutdown(cluster)
    }

    @Test func aLeaderMoveKeepsThePartitionsRecordsAndUnknownBrokersAreRefused() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 2)
        let topic = KafkaClientTests.uniqueName("leader")
        try cluster.createTopic(topic, partitions: 1)
        let producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers]))
        try cluster.setPartitionLeader(topic: topic, partition: 0, brokerId: 1)
        let first = try await producer.send(KafkaOutgoingRecord(topic: topic, partition: 0, value: [1]))
        try cluster.setPartitionLeader(topic: topic, partition: 0, brokerId: 2)
        try cluster.setBrokerRTT(2, rttMs: 20)
        let second = try await producer.send(KafkaOutgoingRecord(topic: topic, partition: 0, value: [2]))
        #expect(first.error == nil && second.error == nil)
        #expect(first.offset == 0 && second.offset == 1, "one log per partition: the new leader appends after the old one's records")
        #expect(throws: KafkaError.self) { try cluster.setPartitionLeader(topic: topic, partition: 0, brokerId: 7) }
        #expect(throws: KafkaError.self) { try cluster.setBrokerRTT(7, rttMs: 10) }
        try cluster.setBrokerRTT(-1, rttMs: 0)
        try cluster.setGroupCoordinator(group: KafkaClientTests.uniqueName("group"), brokerId: 2)
        await producer.close()
        try await KafkaClientTests.shutdown(cluster)
        #expect(throws: KafkaError.self) { try cluster.setBrokerRTT(1, rttMs: 10) }
        #expect(throws: KafkaError.self) { try cluster.setGroupCoordinator(group: "g", brokerId: 1) }
    }
}
