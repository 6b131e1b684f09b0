import CRdKafka

/// The transactional producer API (librdkafka's "Transactional producer API", KIP-98 and KIP-447), for a
/// producer created with `transactional.id` set.
///
/// Every call blocks (up to its `timeoutMs`) and must run on a dedicated thread, never on the cooperative
/// pool; one thread at a time (librdkafka refuses `produce` while a commit or abort is running, and a
/// second transactional call while one runs). Each throws ``KafkaTransactionError``, whose ``KafkaTransactionError/code``
/// says whether to call again, abort, or give up.
extension KafkaProducer {
    /// Registers the `transactional.id` with its transaction coordinator and fences older producers with
    /// the same id, aborting their open transaction (`rd_kafka_init_transactions`). Call once, first.
    /// - Parameter timeoutMs: the longest wait, in milliseconds (-1: `transaction.timeout.ms`).
    /// - Throws: ``KafkaTransactionError`` (retriable: call again).
    public func initTransactions(timeoutMs: Int32) throws(KafkaTransactionError) {
        try KafkaTransactionError.check("rd_kafka_init_transactions") { rd_kafka_init_transactions(client.handle, timeoutMs) }
    }

    /// Begins a transaction (`rd_kafka_begin_transaction`): every record produced from now on belongs to it.
    /// Does not contact the broker.
    /// - Throws: ``KafkaTransactionError`` (fatal, or failed when a transaction is already open).
    public func beginTransaction() throws(KafkaTransactionError) {
        try KafkaTransactionError.check("rd_kafka_begin_transaction") { rd_kafka_begin_transaction(client.handle) }
    }

    /// Adds the consumer's offsets to the current transaction (`rd_kafka_send_offsets_to_transaction`):
    /// they are committed for the group of `consumer` only if the transaction commits. Each offset is the
    /// *next* one to consume. The group's metadata (`rd_kafka_consumer_group_metadata`: group id, generation,
    /// member id) lets the coordinator refuse a member that lost its partitions (KIP-447).
    /// - Parameters:
    ///   - offsets: the next offsets to consume; logical and negative offsets are ignored by librdkafka.
    ///   - consumer: the consumer of the group the records were consumed in.
    ///   - timeoutMs: the longest wait, in milliseconds.
    /// - Throws: ``KafkaTransactionError`` (retriable: call again with the same offsets).
    public func sendOffsetsToTransaction(_ offsets: [TopicPartitionOffset], consumer: KafkaConsumer, timeoutMs: Int32) throws(KafkaTransactionError) {
        guard !offsets.isEmpty else { return }
        guard let metadata = rd_kafka_consumer_group_metadata(consumer.handle) else {
            throw KafkaTransactionError(.failed, operation: "rd_kafka_consumer_group_metadata", message: "the consumer has no group metadata (no group.id?)")
        }
        defer { rd_kafka_consumer_group_metadata_destroy(metadata) }
        try KafkaTransactionError.check("rd_kafka_send_offsets_to_transaction") {
            PartitionList.with(offsets) { rd_kafka_send_offsets_to_transaction(client.handle, $0, metadata, timeoutMs) }
        }
    }

    /// Commits the current transaction (`rd_kafka_commit_transaction`): flushes its records, waits for
    /// their acknowledgements, and ends it; its records become visible to `read_committed` readers and its
    /// offsets are committed.
    /// - Parameter timeoutMs: the longest wait, in milliseconds (-1: the rest of `transaction.timeout.ms`).
    /// - Throws: ``KafkaTransactionError`` (retriable: call again; abortable: ``abortTransaction(timeoutMs:)``).
    public func commitTransaction(timeoutMs: Int32) throws(KafkaTransactionError) {
        try KafkaTransactionError.check("rd_kafka_commit_transaction") { rd_kafka_commit_transaction(client.handle, timeoutMs) }
    }

    /// Aborts the current transaction (`rd_kafka_abort_transaction`): its records are marked aborted
    /// (`read_committed` readers skip them) and its offsets are not committed. Records not yet delivered
    /// are purged.
    /// - Parameter timeoutMs: the longest wait, in milliseconds.
    /// - Throws: ``KafkaTransactionError`` (retriable: call again).
    public func abortTransaction(timeoutMs: Int32) throws(KafkaTransactionError) {
        try KafkaTransactionError.check("rd_kafka_abort_transaction") { rd_kafka_abort_transaction(client.handle, timeoutMs) }
    }
}
