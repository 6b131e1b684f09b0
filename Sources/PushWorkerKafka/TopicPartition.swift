import CRdKafka

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

/// Helpers for `rd_kafka_topic_partition_list_t`, used only inside this module.
enum PartitionList {
    /// Copies a librdkafka list into Swift values.
    static func read(_ list: UnsafePointer<rd_kafka_topic_partition_list_t>?) -> [TopicPartitionOffset] {
        guard let list else { return [] }
        var result: [TopicPartitionOffset] = []
        result.reserveCapacity(Int(list.pointee.cnt))
        for index in 0..<Int(list.pointee.cnt) {
            let element = list.pointee.elems[index]
            result.append(TopicPartitionOffset(
                TopicPartition(topic: String(cString: element.topic), partition: element.partition),  // NUL-safe: topic names are [a-zA-Z0-9._-]+
                offset: element.offset
            ))
        }
        return result
    }

    /// Calls `body` with a new librdkafka list holding `entries`, and destroys the list afterwards.
    static func with<R>(
        _ entries: [TopicPartitionOffset],
        _ body: (UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) throws -> R
    ) rethrows -> R {
        let list = rd_kafka_topic_partition_list_new(Int32(max(entries.count, 1)))!  // invariant: only fails on allocation failure, which librdkafka itself treats as fatal
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for entry in entries {
            let element = rd_kafka_topic_partition_list_add(list, entry.topicPartition.topic, entry.topicPartition.partition)
            element?.pointee.offset = entry.offset
        }
        return try body(list)
    }
}
