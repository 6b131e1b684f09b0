import PushWorkerCore
import PushWorkerKafka

/// What the consumer loop, the service and its health checks need of the component that writes an input
/// record's outputs (its result, its dead letter when there is one) and says when the record is done:
/// ``ResultPublisher`` (at-least-once: each output acknowledged by the broker, then the offset is stored
/// and auto-committed) or ``TransactionalPublisher`` (exactly-once results: an input record's outputs and
/// its offset are written in one Kafka transaction).
///
/// An input record's outputs are a list of records, all written together: its result with its dead letter
/// or its copy for the retry topic, or (``forward(_:source:)``) a copy for the retry topic alone. In the
/// exactly-once mode they go into one transaction, never split over two.
protocol OutputPublisher: AnyObject, Sendable {
    /// Fetches the output topics' metadata on a thread of its own, without waiting for it, so that the
    /// first outputs go out at once rather than after librdkafka's next topic scan (up to 1 s).
    func prepareOutputTopics(_ topics: [String], timeoutMs: Int32)
    /// Notes partitions assigned to this member: their outputs are written from now on.
    func own(_ partitions: [TopicPartition])
    /// Notes partitions revoked or lost: nothing of theirs is written from now on (outputs not yet written
    /// are dropped; their records are read again by the partitions' next owner). Waits until none of their
    /// outputs is being handed to librdkafka.
    /// - Returns: how many results were dropped.
    @discardableResult
    func release(_ partitions: [TopicPartition]) -> Int
    /// Writes an input record's result, and its dead letter or its copy for the retry topic when there is one.
    func publish(_ result: ResultRecord, deadLetter: KafkaOutgoingRecord?, retry: KafkaOutgoingRecord?)
    /// Writes `record`, a copy of the input record at `source` for the retry topic that stands in for its
    /// result for now (a scheduled push, a record following a retry of its key).
    func forward(_ record: KafkaOutgoingRecord, source: RecordSource)
    /// Writes a batch of input records' outputs, in order: the same as ``publish(_:deadLetter:retry:)`` and
    /// ``forward(_:source:)`` for each, for less per record.
    func publish(_ batch: [Publication])
    /// Hands a batch over to be written, in order with the batches handed over before it, possibly after
    /// this returns (a publisher with a publishing thread of its own); its outputs count as unacknowledged
    /// from the call on.
    func submit(_ batch: [Publication])
    /// Waits, up to `timeoutMs`, while too many handed-over outputs wait to be written (a publisher with
    /// a publishing thread of its own) or to be acknowledged; returns at once otherwise. Blocking: the
    /// consumer's thread.
    func waitForRoom(timeoutMs: Int)
    /// Produces what waits for a retry, when due (called every round of the consumer loop).
    func retryBacklog()
    /// Input partitions whose outputs cannot be written now (the consumer pauses them).
    var failingPartitions: Set<TopicPartition> { get }
    /// Outputs published and not yet acknowledged (or committed).
    var unacknowledged: Int { get }
    /// How long the oldest output not yet acknowledged (or committed) has waited, or `nil` when none waits.
    var oldestUnacknowledgedAge: Duration? { get }
    /// How long ago the thread that writes outputs last made a round, or `nil` once closed (for liveness).
    var sinceLastPoll: Duration? { get }
    /// Writes what is left, waiting up to `timeoutMs` (then `cutShortTimeoutMs` once `cutShort` returns
    /// true), and closes the producer.
    /// - Returns: how many outputs were still not acknowledged (or committed).
    func close(timeoutMs: Int, cutShort: @Sendable () -> Bool, cutShortTimeoutMs: Int) async -> Int
}

extension ResultPublisher: OutputPublisher {}
