/// Kafka protocol API keys, for ``EmbeddedKafkaCluster/pushRequestErrors(apiKey:count:error:)``: the
/// requests whose failures tests inject (the numbers are the Kafka protocol's, as in librdkafka's
/// `rdkafka_protocol.h`).
public enum KafkaAPIKey {
    /// Produce (0).
    public static let produce: Int16 = 0
    /// OffsetCommit (8).
    public static let offsetCommit: Int16 = 8
    /// FindCoordinator (10): a client looks up its group's (or transaction's) coordinator.
    public static let findCoordinator: Int16 = 10
    /// JoinGroup (11): a member joins (or rejoins) its consumer group.
    public static let joinGroup: Int16 = 11
    /// Heartbeat (12): a member keeps its session in the group.
    public static let heartbeat: Int16 = 12
    /// SyncGroup (14): a member gets its assignment after a JoinGroup.
    public static let syncGroup: Int16 = 14
    /// InitProducerId (22): `rd_kafka_init_transactions`, and idempotent producers' id.
    public static let initProducerId: Int16 = 22
    /// AddPartitionsToTxn (24): sent before a transaction's first record to each partition.
    public static let addPartitionsToTxn: Int16 = 24
    /// AddOffsetsToTxn (25): the first half of `rd_kafka_send_offsets_to_transaction`, to the transaction coordinator.
    public static let addOffsetsToTxn: Int16 = 25
    /// EndTxn (26): `rd_kafka_commit_transaction` and `rd_kafka_abort_transaction`.
    public static let endTxn: Int16 = 26
    /// TxnOffsetCommit (28): the second half of `rd_kafka_send_offsets_to_transaction`, to the group coordinator.
    public static let txnOffsetCommit: Int16 = 28
}
