import PushWorkerCore
import PushWorkerKafka

extension ServiceMetrics {
    /// What the latest statistics said, per client, and the assignment.
    struct KafkaState {
        var assigned: Set<TopicPartition> = []
        var consumer = ClientState()
        var producer = ClientState()
    }

    /// What the latest statistics of one client said.
    struct ClientState {
        var latest: KafkaStatistics?
        /// When ``latest`` arrived (``WallClock/monotonicNs()``), 0 before the first.
        var receivedAtNs: Int64 = 0
        /// `req_timeouts` last seen per broker name (the counter moves by the increase).
        var requestTimeouts: [String: Int] = [:]
    }

    /// The statistics clients: the label `client` of the `pushworker_kafka_*` metrics.
    enum Client: String, Sendable { case consumer, producer }
}
