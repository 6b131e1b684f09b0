import CRdKafka

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
