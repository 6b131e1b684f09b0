import Foundation
import PushWorkerKafka
import Testing

/// The transactional producer wrapper (``KafkaProducer`` transactions, ``KafkaTransactionError``) against
/// librdkafka 2.0.2's mock cluster: what a commit does, and how each injected broker error is classed.
@Suite(.timeLimit(.minutes(1)))
struct KafkaTransactionTests {
    static func uniqueName(_ prefix: String) -> String { "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())" }

    /// Runs one transaction (one record to `topic`, offset 5 of `topic`[0] for `consumer`'s group) on a new
    /// transactional producer; `inject` runs after `begin`. Returns the error of the first call that failed.
    static func transaction(_ cluster: EmbeddedKafkaCluster, topic: String, consumer: KafkaConsumer, commitTimeoutMs: Int32 = 5000,
                            inject: () throws -> Void = {}) throws -> (KafkaProducer, KafkaTransactionError?) {
        let producer = try KafkaProducer(configuration: KafkaConfiguration([
            "bootstrap.servers": cluster.bootstrapServers, "transactional.id": uniqueName("txn"),
        ]))
        do throws(KafkaTransactionError) {
            try producer.initTransactions(timeoutMs: 10_000)
            try producer.beginTransaction()
            try? inject()
            try? producer.produce(KafkaOutgoingRecord(topic: topic, value: Array("x".utf8)), token: 1)
            try producer.sendOffsetsToTransaction([TopicPartitionOffset(TopicPartition(topic: topic, partition: 0), offset: 5)], consumer: consumer, timeoutMs: 5000)
            try producer.commitTransaction(timeoutMs: commitTimeoutMs)
            return (producer, nil)
        } catch {
            return (producer, error)
        }
    }

    @Test func errorClassesOfInjectedBrokerErrors() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let topic = Self.uniqueName("txn-classes")
        try cluster.createTopic(topic, partitions: 1)
        let outcome = try await DedicatedThread.run(name: "txn-test") { () throws -> [String: String] in
            let consumer = try KafkaConsumer.reader(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers, "group.id": Self.uniqueName("g")]))
            defer { try? consumer.close() }
            var seen: [String: String] = [:]
            // The happy path: the mock takes the TxnOffsetCommit but does not store it (2.0.2).
            let (_, none) = try Self.transaction(cluster, topic: topic, consumer: consumer)
            seen["none"] = none.map { "\($0.code)" } ?? "ok"
            seen["committedAfterCommit"] = String(try consumer.committed([TopicPartition(topic: topic, partition: 0)], timeoutMs: 5000)[0].offset)
            // EndTxn PRODUCER_FENCED (90): fatal _FENCED.
            let (_, fenced) = try Self.transaction(cluster, topic: topic, consumer: consumer) { cluster.pushRequestErrors(apiKey: KafkaAPIKey.endTxn, count: 1, error: 90) }
            seen["endTxnFenced"] = fenced.map { "\($0.code) \($0.rdKafkaErrorName)" } ?? "ok"
            // AddPartitionsToTxn TOPIC_AUTHORIZATION_FAILED (29): abortable; after the abort a transaction commits.
            let (producer, refused) = try Self.transaction(cluster, topic: topic, consumer: consumer) { cluster.pushRequestErrors(apiKey: KafkaAPIKey.addPartitionsToTxn, count: 1, error: 29) }
            seen["addPartitionsRefused"] = refused.map { "\($0.code) \($0.rdKafkaErrorName)" } ?? "ok"
            do throws(KafkaTransactionError) {
                try producer.abortTransaction(timeoutMs: 5000)
                try producer.beginTransaction()
                try? producer.produce(KafkaOutgoingRecord(topic: topic, value: Array("y".utf8)), token: 2)
                try producer.commitTransaction(timeoutMs: 5000)
                seen["afterAbort"] = "ok"
            } catch {
                seen["afterAbort"] = error.message
            }
            // A slow EndTxn (2 s) and a commit timeout of 300 ms: retriable _TIMED_OUT; calling again commits.
            let (slow, timedOut) = try Self.transaction(cluster, topic: topic, consumer: consumer, commitTimeoutMs: 300) {
                try cluster.delayNextResponse(apiKey: KafkaAPIKey.endTxn, delayMs: 2000)
            }
            seen["slowEndTxn"] = timedOut.map { "\($0.code) \($0.rdKafkaErrorName)" } ?? "ok"
            do throws(KafkaTransactionError) {
                try slow.commitTransaction(timeoutMs: 5000)
                seen["retried"] = "ok"
            } catch {
                seen["retried"] = error.message
            }
            return seen
        }
        #expect(outcome["none"] == "ok")
        // librdkafka 2.0.2's mock: TxnOffsetCommit does not store offsets (docs/guarantees.md, "What was proven here, and what was not").
        #expect(outcome["committedAfterCommit"] == "-1001", "\(outcome)")
        #expect(outcome["endTxnFenced"] == "fatal _FENCED", "\(outcome)")
        #expect(outcome["addPartitionsRefused"] == "abortable TOPIC_AUTHORIZATION_FAILED", "\(outcome)")
        #expect(outcome["afterAbort"] == "ok", "\(outcome)")
        #expect(outcome["slowEndTxn"] == "retriable _TIMED_OUT", "\(outcome)")
        #expect(outcome["retried"] == "ok", "\(outcome)")
        try await DedicatedThread.run(name: "cluster-shutdown") { cluster.shutdown() }
    }
}
