/// The broker's acknowledgement of one produced record, or the reason it failed.
public struct KafkaDeliveryReport: Sendable {
    /// The caller's token given to ``KafkaProducer/produce(_:token:)``.
    public var token: UInt64
    /// Where the record was written; the offset is -1 when librdkafka does not know it (e.g. retried
    /// idempotent messages).
    public var topicPartition: TopicPartition
    /// The offset written, or -1 if unknown.
    public var offset: Int64
    /// `nil` when the broker acknowledged the record; otherwise why it was not delivered.
    public var error: KafkaError?
}
