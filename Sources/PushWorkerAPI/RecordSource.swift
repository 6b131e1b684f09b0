/// Where a record came from: its topic, partition and offset (the result's `source`).
public struct RecordSource: Sendable, Hashable {
    /// The input topic.
    public var topic: String
    /// The partition.
    public var partition: Int32
    /// The offset in the partition.
    public var offset: Int64

    /// Creates a source.
    public init(topic: String, partition: Int32, offset: Int64) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
    }

    /// The default message id, `<topic>-<partition>-<offset>` (contract section 1).
    public var defaultMessageId: String { "\(topic)-\(partition)-\(offset)" }
}
