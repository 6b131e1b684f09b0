import PushWorkerKafka
import Testing

/// Offsets committed with metadata by a consumer that never joins its group (the crash guard's store), on
/// the embedded cluster.
@Suite(.timeLimit(.minutes(1)))
struct OffsetMetadataTests {
    /// (Not with a NUL inside: librdkafka 2.0.2 keeps fetched metadata with `strndup` and copies it into the
    /// caller's list with the broker's length, reading past its own buffer; AddressSanitizer stops there.)
    @Test func metadataComesBackAsCommitted() async throws {
        let cluster = try await DedicatedThread.run(name: "cluster") { try EmbeddedKafkaCluster() }
        defer { cluster.shutdown() }
        let topic = KafkaClientTests.uniqueName("metadata")
        try cluster.createTopic(topic, partitions: 2)
        let group = KafkaClientTests.uniqueName("guard")
        let consumer = try KafkaConsumer(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers, "group.id": group, "enable.auto.commit": "false"]))
        let zero = TopicPartition(topic: topic, partition: 0), one = TopicPartition(topic: topic, partition: 1)
        let marks = [OffsetAndMetadata(zero, offset: 1041, metadata: Array("pushworker-crash-guard/1 lease=1041 running=20 deaths=2".utf8)), OffsetAndMetadata(one, offset: 7, metadata: [])]
        let read = try await DedicatedThread.run(name: "commit") { () throws -> [OffsetAndMetadata] in
            try consumer.commit(offsetsAndMetadata: marks)
            return try consumer.committedOffsetsAndMetadata([zero, one], timeoutMs: 5000)
        }
        #expect(read.sorted { $0.topicPartition.partition < $1.topicPartition.partition } == marks)
        // Overwritten by the next commit, metadata and all.
        let again = try await DedicatedThread.run(name: "commit") { () throws -> [OffsetAndMetadata] in
            try consumer.commit(offsetsAndMetadata: [OffsetAndMetadata(zero, offset: 2000, metadata: Array("clean".utf8))])
            return try consumer.committedOffsetsAndMetadata([zero], timeoutMs: 5000)
        }
        #expect(again == [OffsetAndMetadata(zero, offset: 2000, metadata: Array("clean".utf8))])
        try await DedicatedThread.run(name: "close") { try consumer.close() }
    }
}
