/// A topic and one of its partitions.
public struct TopicPartition: Hashable, Sendable, CustomStringConvertible {
    /// The topic name.
    public var topic: String
    /// The partition number (0-based).
    public var partition: Int32

    /// Creates a topic-partition.
    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)[\(partition)]" }
}
