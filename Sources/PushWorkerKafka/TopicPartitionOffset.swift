/// A topic-partition with an offset: for stores and commits this is the *next* offset to consume
/// (the last processed offset + 1), as Kafka commits it.
public struct TopicPartitionOffset: Hashable, Sendable {
    /// The topic-partition.
    public var topicPartition: TopicPartition
    /// The offset.
    public var offset: Int64

    /// Creates a topic-partition-offset.
    public init(_ topicPartition: TopicPartition, offset: Int64) {
        self.topicPartition = topicPartition
        self.offset = offset
    }
}
