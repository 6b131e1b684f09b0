import CRdKafka

/// The callbacks one librdkafka client calls into, reached through `rd_kafka_opaque(rk)`.
///
/// Retained by ``KafkaClient`` for the whole life of the `rd_kafka_t`, so the opaque pointer stays valid
/// until `rd_kafka_destroy` has returned.
final class KafkaCallbacks: Sendable {
    let log: KafkaLogHandler?
    /// Delivery reports: set on producers only. Called on the thread that runs `rd_kafka_poll`/`rd_kafka_flush`.
    let delivery: (@Sendable (UnsafePointer<rd_kafka_message_t>) -> Void)?
    /// Rebalance callback: set on consumers only. Called on the thread that runs `rd_kafka_consumer_poll`.
    let rebalance: (@Sendable (OpaquePointer, rd_kafka_resp_err_t, UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?) -> Void)?
    /// Statistics reports (`stats_cb`, every `statistics.interval.ms`), parsed. Called on the thread that
    /// serves the client's main queue: `rd_kafka_poll` for producers, `rd_kafka_consumer_poll` for consumers.
    let statistics: KafkaStatisticsHandler?
    /// Client errors (`error_cb`): librdkafka's error code and reason, before they are logged. Called on the
    /// thread that serves the client's main queue (`rd_kafka_poll` for producers).
    let error: (@Sendable (rd_kafka_resp_err_t, String) -> Void)?

    init(
        log: KafkaLogHandler?,
        delivery: (@Sendable (UnsafePointer<rd_kafka_message_t>) -> Void)? = nil,
        rebalance: (@Sendable (OpaquePointer, rd_kafka_resp_err_t, UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?) -> Void)? = nil,
        statistics: KafkaStatisticsHandler? = nil,
        error: (@Sendable (rd_kafka_resp_err_t, String) -> Void)? = nil
    ) {
        self.error = error
        self.log = log
        self.delivery = delivery
        self.rebalance = rebalance
        self.statistics = statistics
    }

    static func from(_ rk: OpaquePointer?) -> KafkaCallbacks? {
        guard let rk, let opaque = rd_kafka_opaque(rk) else { return nil }
        return Unmanaged<KafkaCallbacks>.fromOpaque(opaque).takeUnretainedValue()
    }
}
