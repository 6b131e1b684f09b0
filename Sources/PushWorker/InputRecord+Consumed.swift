import PushWorkerCore
import PushWorkerKafka

extension InputRecord {
    /// The core's view of a record the consumer took: its topic, partition and offset as the source, its
    /// key, value and headers (names and exact values) as they were read. `receivedAtMs` is when it was
    /// taken (UNIX milliseconds). Used by the consumer loop, and by the bench's stage measurement
    /// (``HotPathStages``) so that it measures the same conversion.
    init(consumed record: KafkaRecord, receivedAtMs: Int64) {
        self.init(
            source: RecordSource(topic: record.topicPartition.topic, partition: record.topicPartition.partition, offset: record.offset),
            key: record.key, value: record.value,
            headers: RecordHeaders(record.headers.map { RecordHeader(name: $0.name, value: $0.value) }),
            receivedAtMs: receivedAtMs)
    }
}
