import CRdKafka

/// Owns a reference to a consumer's queue (`rd_kafka_queue_get_consumer`) and gives it back in `deinit`
/// (`rd_kafka_queue_destroy`).
///
/// `@unchecked Sendable`: the only stored state is the queue pointer, set once in `init` and freed once in
/// `deinit`; `rd_kafka_queue_length` is thread-safe. It keeps the client alive, so the queue never outlives
/// its `rd_kafka_t`.
final class ConsumerQueue: @unchecked Sendable {
    let handle: OpaquePointer?
    private let client: KafkaClient

    init(client: KafkaClient) {
        self.client = client
        self.handle = rd_kafka_queue_get_consumer(client.handle)
    }

    deinit {
        if let handle { rd_kafka_queue_destroy(handle) }
    }
}
