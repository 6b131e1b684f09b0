import CRdKafka
import Glibc

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
        try with(metadata: entries.map { OffsetAndMetadata($0.topicPartition, offset: $0.offset, metadata: []) }, body)
    }

    /// The largest metadata string read back (bytes beyond it are dropped): Kafka's default
    /// `offset.metadata.max.bytes` is 4096.
    static let maxMetadataBytes = 4096

    /// Copies a librdkafka list into Swift values with each element's metadata bytes, up to the first NUL:
    /// librdkafka 2.0.2 keeps fetched metadata with `strndup` (OffsetFetch, `RD_KAFKAP_STR_DUP`), so its copy
    /// ends at the first NUL while `metadata_size` is the length the broker sent; `rd_kafka_committed` then
    /// copies that length into the caller's list, reading past its own buffer (AddressSanitizer reports it
    /// inside librdkafka), and what follows the NUL is other memory. It is never kept here.
    static func readWithMetadata(_ list: UnsafePointer<rd_kafka_topic_partition_list_t>?) -> [OffsetAndMetadata] {
        guard let list else { return [] }
        return (0..<Int(list.pointee.cnt)).map { index in
            let element = list.pointee.elems[index]
            var metadata: [UInt8] = []
            if let bytes = element.metadata, element.metadata_size > 0 {
                let count = strnlen(bytes.assumingMemoryBound(to: CChar.self), min(Int(element.metadata_size), maxMetadataBytes))
                metadata = Array(UnsafeRawBufferPointer(start: bytes, count: count))
            }
            return OffsetAndMetadata(TopicPartition(topic: String(cString: element.topic), partition: element.partition),  // NUL-safe: topic names are [a-zA-Z0-9._-]+
                                     offset: element.offset, metadata: metadata)
        }
    }

    /// Calls `body` with a new librdkafka list holding `entries` with their metadata (copied into memory
    /// from `malloc`, which the list's destroy frees), and destroys the list afterwards.
    static func with<R>(
        metadata entries: [OffsetAndMetadata],
        _ body: (UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) throws -> R
    ) rethrows -> R {
        let list = rd_kafka_topic_partition_list_new(Int32(max(entries.count, 1)))!  // invariant: only fails on allocation failure, which librdkafka itself treats as fatal
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for entry in entries {
            guard let element = rd_kafka_topic_partition_list_add(list, entry.topicPartition.topic, entry.topicPartition.partition) else { continue }
            element.pointee.offset = entry.offset
            if !entry.metadata.isEmpty, let copy = malloc(entry.metadata.count) {
                entry.metadata.withUnsafeBytes { copy.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }  // invariant: non-empty array
                element.pointee.metadata = copy
                element.pointee.metadata_size = entry.metadata.count
            }
        }
        return try body(list)
    }
}
