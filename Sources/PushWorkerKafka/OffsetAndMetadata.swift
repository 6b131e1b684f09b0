/// An offset committed with its metadata string (Kafka's `OffsetAndMetadata`): the group coordinator keeps
/// both in `__consumer_offsets` and returns both to ``KafkaConsumer/committedOffsetsAndMetadata(_:timeoutMs:)``.
public struct OffsetAndMetadata: Hashable, Sendable {
    /// The topic-partition.
    public var topicPartition: TopicPartition
    /// The offset (-1001, `RD_KAFKA_OFFSET_INVALID`, where nothing is committed).
    public var offset: Int64
    /// The metadata bytes (empty where none were). Read back, they end at the first NUL (librdkafka 2.0.2
    /// keeps no more: ``KafkaConsumer/committedOffsetsAndMetadata(_:timeoutMs:)``).
    public var metadata: [UInt8]

    /// Creates an offset with its metadata.
    public init(_ topicPartition: TopicPartition, offset: Int64, metadata: [UInt8]) {
        self.topicPartition = topicPartition
        self.offset = offset
        self.metadata = metadata
    }
}
