import CRdKafka

/// A record consumed from Kafka. Its bytes are copied out of librdkafka's message before the message is
/// destroyed, so a `KafkaRecord` owns everything it holds.
public struct KafkaRecord: Sendable {
    /// The topic-partition it was read from.
    public var topicPartition: TopicPartition
    /// Its offset in the partition.
    public var offset: Int64
    /// The key bytes, or `nil` for a record without a key.
    public var key: [UInt8]?
    /// The value bytes, or `nil` for a null-value record (a tombstone).
    public var value: [UInt8]?
    /// The headers, in record order (a name may repeat). Values are exact bytes; names are read up to a NUL
    /// byte (librdkafka's `rd_kafka_header_get_all` gives them as C strings).
    public var headers: [KafkaHeader]
    /// The record timestamp in milliseconds since the UNIX epoch, or `nil` if the broker gave none.
    public var timestampMs: Int64?

    /// Creates a record (used by tests and by the testing kit).
    public init(
        topicPartition: TopicPartition,
        offset: Int64,
        key: [UInt8]? = nil,
        value: [UInt8]?,
        headers: [KafkaHeader] = [],
        timestampMs: Int64? = nil
    ) {
        self.topicPartition = topicPartition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestampMs = timestampMs
    }

    /// Copies a librdkafka message (which must not be an error message).
    init(copying message: UnsafePointer<rd_kafka_message_t>, topic: String) {
        let m = message.pointee
        self.topicPartition = TopicPartition(topic: topic, partition: m.partition)
        self.offset = m.offset
        if let payload = m.payload {
            self.value = Array(UnsafeRawBufferPointer(start: payload, count: m.len))
        } else {
            self.value = nil
        }
        if let key = m.key {
            self.key = Array(UnsafeRawBufferPointer(start: key, count: m.key_len))
        } else {
            self.key = nil
        }
        var tstype = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let ts = rd_kafka_message_timestamp(message, &tstype)
        self.timestampMs = tstype == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? nil : ts
        var headers: [KafkaHeader] = []
        var hdrs: OpaquePointer?
        if rd_kafka_message_headers(message, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR, let hdrs {
            var index = 0
            var name: UnsafePointer<CChar>?
            var value: UnsafeRawPointer?
            var size = 0
            while rd_kafka_header_get_all(hdrs, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
                // librdkafka gives a header's name as a C string (it has no length): a name is read up to
                // its first NUL byte, the one place a value from outside is cut. Values come with their size
                // and are copied exactly, NUL bytes and non-UTF-8 bytes included.
                let headerName = name.map { String(cString: $0) } ?? ""  // NUL-safe: librdkafka gives header names only as C strings (documented limit; values are exact)
                let bytes = value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) }
                headers.append(KafkaHeader(name: headerName, value: bytes))
                index += 1
            }
        }
        self.headers = headers
    }
}
