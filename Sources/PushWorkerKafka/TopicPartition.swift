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

    /// Hashes the partition number and the length of the topic's name, not every byte of it: the tables a
    /// member keys by topic-partition hold a handful of topics and are looked up several times per record,
    /// so this tells their keys apart as well at a fraction of the cost. Equality still compares the names.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(partition)
        hasher.combine(topic.utf8.count)
    }
}
