import PushWorkerKafka

/// Lets the producer's delivery callback reach the publisher created after it.
///
/// `@unchecked Sendable`: both properties are set once during ``ResultPublisher``'s `init`, before any
/// record is produced (so before any delivery report can arrive), and only read afterwards.
final class ProducerBox: @unchecked Sendable {
    var producer: KafkaProducer?
    var handler: (@Sendable ([KafkaDeliveryReport]) -> Void)?
}
