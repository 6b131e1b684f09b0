/// A record to produce.
public struct KafkaOutgoingRecord: Sendable {
    /// The topic to produce to.
    public var topic: String
    /// The partition, or `nil` to let the partitioner choose (librdkafka `partitioner`, by key).
    public var partition: Int32?
    /// The key bytes, or `nil` for none.
    public var key: [UInt8]?
    /// The value bytes, or `nil` for a null value.
    public var value: [UInt8]?
    /// The headers.
    public var headers: [KafkaHeader]

    /// Creates a record to produce.
    public init(topic: String, partition: Int32? = nil, key: [UInt8]? = nil, value: [UInt8]?, headers: [KafkaHeader] = []) {
        self.topic = topic
        self.partition = partition
        self.key = key
        self.value = value
        self.headers = headers
    }
}
