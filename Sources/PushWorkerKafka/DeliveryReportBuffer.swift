import Synchronization

/// Delivery reports served by one `rd_kafka_poll` call, collected by `dr_msg_cb` and handed over after it.
final class DeliveryReportBuffer: Sendable {
    struct State {
        var reports: [KafkaDeliveryReport] = []
        var topicNames = TopicNameCache()
    }
    let state = Mutex(State())
}
