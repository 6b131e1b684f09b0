import CRdKafka

/// What a failure to produce a record means for the record: wait and produce it again, change it, or wait
/// for an operator. The class of a ``KafkaError`` from ``KafkaProducer/produce(_:token:)`` (a
/// `rd_kafka_produceva` error) or from a delivery report (``KafkaDeliveryReport/error``), by
/// ``KafkaError/produceFailure``.
///
/// The table follows librdkafka 2.0.2's `rdkafka.h` error codes and its Produce error handling
/// (`rd_kafka_handle_Produce_error`: which broker errors it retries itself and which it reports as
/// permanent). A code not listed is ``transient``: the record is kept and produced again, which never
/// loses anything.
public enum ProduceFailure: String, Sendable, CaseIterable {
    /// The record may go through later as it is: librdkafka's queue is full (`_QUEUE_FULL`), the record
    /// timed out after librdkafka's own retries (`_MSG_TIMED_OUT`, bounded by `message.timeout.ms`), a
    /// broker or the network is down (`_TRANSPORT`, `_ALL_BROKERS_DOWN`, `NETWORK_EXCEPTION`), leadership
    /// moved (`LEADER_NOT_AVAILABLE`, `NOT_LEADER_FOR_PARTITION`), too few replicas
    /// (`NOT_ENOUGH_REPLICAS`, `…_AFTER_APPEND`), a request timed out (`REQUEST_TIMED_OUT`,
    /// `_TIMED_OUT`), any error librdkafka marks retriable (`rd_kafka_error_is_retriable`), and every
    /// code not listed under the other classes.
    case transient
    /// This record can never be produced as it is, whatever the broker's state: it is larger than the
    /// producer's `message.max.bytes` or the broker's/topic's `max.message.bytes` (`MSG_SIZE_TOO_LARGE`,
    /// `INVALID_MSG_SIZE`, `RECORD_LIST_TOO_LARGE`), or the broker refused its contents (`INVALID_RECORD`,
    /// `INVALID_MSG` a.k.a. `CORRUPT_MESSAGE`, `INVALID_TIMESTAMP`, `UNSUPPORTED_FOR_MESSAGE_FORMAT`, e.g.
    /// headers on an old message format), or librdkafka refused the arguments (`_INVALID_ARG`, `_BAD_MSG`,
    /// `_KEY_SERIALIZATION`, `_VALUE_SERIALIZATION`). Only a smaller or different record can go through.
    case recordRejected
    /// Nothing can be written to the topic until an operator acts: no write permission
    /// (`TOPIC_AUTHORIZATION_FAILED`, `CLUSTER_AUTHORIZATION_FAILED`), the topic or partition does not
    /// exist and is not auto-created (`UNKNOWN_TOPIC_OR_PART`, `_UNKNOWN_TOPIC`, `_UNKNOWN_PARTITION`), or
    /// its name is invalid (`TOPIC_EXCEPTION`, the broker's `InvalidTopicException`).
    case topicRefused
    /// The producer itself can no longer produce (idempotence or transaction state lost): `_FATAL`,
    /// `_FENCED`, `PRODUCER_FENCED`, `INVALID_PRODUCER_EPOCH`, `OUT_OF_ORDER_SEQUENCE_NUMBER`,
    /// `_GAPLESS_GUARANTEE`, `TRANSACTIONAL_ID_AUTHORIZATION_FAILED`. Only a new producer (a restart)
    /// helps.
    case fatal

    /// The class of librdkafka error `code` (an `rd_kafka_resp_err_t` raw value); `isRetriable` is
    /// `rd_kafka_error_is_retriable` when the error came as an `rd_kafka_error_t` (then `true` wins over
    /// the table), `nil` for a delivery report's bare code. 0 (no librdkafka code) is ``transient``.
    public static func classify(rdKafkaError code: Int32, isRetriable: Bool? = nil) -> ProduceFailure {
        if isRetriable == true { return .transient }
        return table[code] ?? .transient
    }

    private static let table: [Int32: ProduceFailure] = {
        var table: [Int32: ProduceFailure] = [:]
        let rejected: [rd_kafka_resp_err_t] = [
            RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE, RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE,
            RD_KAFKA_RESP_ERR_INVALID_RECORD, RD_KAFKA_RESP_ERR_INVALID_MSG, RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP,
            RD_KAFKA_RESP_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT, RD_KAFKA_RESP_ERR__INVALID_ARG, RD_KAFKA_RESP_ERR__BAD_MSG,
            RD_KAFKA_RESP_ERR__KEY_SERIALIZATION, RD_KAFKA_RESP_ERR__VALUE_SERIALIZATION,
        ]
        let refused: [rd_kafka_resp_err_t] = [
            RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED,
            RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC, RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION,
            RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION,
        ]
        let fatal: [rd_kafka_resp_err_t] = [
            RD_KAFKA_RESP_ERR__FATAL, RD_KAFKA_RESP_ERR__FENCED, RD_KAFKA_RESP_ERR_PRODUCER_FENCED,
            RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
            RD_KAFKA_RESP_ERR__GAPLESS_GUARANTEE, RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ]
        for code in rejected { table[code.rawValue] = .recordRejected }
        for code in refused { table[code.rawValue] = .topicRefused }
        for code in fatal { table[code.rawValue] = .fatal }
        return table
    }()
}

extension KafkaError {
    /// What this failure to produce a record means for the record (``ProduceFailure``), from
    /// ``rdKafkaError`` and ``isRetriable``. ``KafkaError/Code/queueFull`` is always
    /// ``ProduceFailure/transient``.
    public var produceFailure: ProduceFailure {
        if code == .queueFull { return .transient }
        return ProduceFailure.classify(rdKafkaError: rdKafkaError, isRetriable: isRetriable)
    }
}
