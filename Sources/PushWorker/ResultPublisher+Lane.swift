import PushWorkerCore
import PushWorkerKafka

// What the publisher keeps per input partition (a lane) and under its lock.

extension ResultPublisher {
    /// A result or dead letter on its way: the record, and what retrying, replacing and acknowledging it need.
    struct Outgoing: Sendable {
        /// The record to produce. Kept, with ``labels`` and ``result``, in one shared immutable ``Body``: an
        /// outgoing record is copied several times on its way (the batch, the in-flight table, the records to
        /// produce, a lane), and each copy then retains one object instead of every array and string of the
        /// record and its result (retain and release were a quarter of pushworker's CPU samples under `perf`).
        var record: KafkaOutgoingRecord {
            get { body.record }
            set { body = Body(record: newValue, labels: body.labels, result: body.result) }
        }
        var source: TopicPartition
        var offset: Int64
        /// The result's labels in `pushworker_results_total` (or `pushworker_dead_letters_total`), counted
        /// once acknowledged.
        var labels: ResultKey { body.labels }
        /// Publish order (over all lanes): a lane keeps its records in this order.
        var sequence: UInt64
        /// When it was published (``WallClock/monotonicNs()``), for the age of the oldest unacknowledged one.
        var publishedAtNs: Int64
        /// Whether this is the dead letter of the input record rather than its result.
        var isDeadLetter = false
        /// Whether this is a copy of the input record for the retry topic (its next attempt, or a record
        /// forwarded there without a result) rather than its result.
        var isRetryTopicCopy = false
        /// Whether the input record has a second record (its result and its dead letter) to wait for.
        var hasCompanion = false
        /// 0 for the record as published, then the ``ResultPublisher/replacement(of:result:isDeadLetter:stage:error:)`` stage.
        var stage = 0
        /// The result (for results only), to build a replacement from.
        var result: ResultRecord? { body.result }
        private var body: Body
        /// Whether it was sent alone to test its failing lane (its acknowledgement lets the lane go on).
        var isProbe = false

        init(record: KafkaOutgoingRecord, source: TopicPartition, offset: Int64, labels: ResultKey, sequence: UInt64,
             publishedAtNs: Int64, result: ResultRecord? = nil) {
            self.body = Body(record: record, labels: labels, result: result)
            self.source = source
            self.offset = offset
            self.sequence = sequence
            self.publishedAtNs = publishedAtNs
        }

        /// What copies of an outgoing record share; a change makes a new one.
        private final class Body: Sendable {
            let record: KafkaOutgoingRecord
            let labels: ResultKey
            let result: ResultRecord?

            init(record: KafkaOutgoingRecord, labels: ResultKey, result: ResultRecord?) {
                self.record = record
                self.labels = labels
                self.result = result
            }
        }
    }

    /// An input record's position, for records waiting on more than one acknowledgement.
    struct Position: Hashable {
        var partition: TopicPartition
        var offset: Int64
    }

    /// The records of one input partition waiting to be produced.
    struct Lane {
        /// Waiting records, in ``Outgoing/sequence`` order.
        var waiting: [Outgoing] = []
        /// The token of the record sent alone to test the lane after a failure, until its report.
        var probe: UInt64?
        /// Whether the lane failed and no probe has been acknowledged since: then it sends one record at a time.
        var failing = false
        /// Failed attempts in a row (the backoff doubles with each).
        var failures = 0
        /// Not before this time (``WallClock/monotonicNs()``) is the lane produced again.
        var retryAtNs: Int64 = 0
        /// Whether a ``ResultPublisher/drain(_:)`` is producing the lane (one at a time, so that two
        /// threads never interleave one lane's records).
        var draining = false

        var isIdle: Bool { waiting.isEmpty && probe == nil && !failing && !draining }

        /// Inserts by sequence (a new record goes last; a record coming back goes before later ones).
        mutating func insert(_ outgoing: Outgoing) {
            if let last = waiting.last, last.sequence > outgoing.sequence {
                let index = waiting.firstIndex { $0.sequence > outgoing.sequence } ?? waiting.endIndex
                waiting.insert(outgoing, at: index)
            } else {
                waiting.append(outgoing)
            }
        }

        /// Inserts records by sequence, in one merge: O(waiting + records).
        mutating func insert(contentsOf records: [Outgoing]) {
            guard records.count > 1 else {
                if let record = records.first { insert(record) }
                return
            }
            let sorted = records.sorted { $0.sequence < $1.sequence }
            guard let last = waiting.last, let first = sorted.first, last.sequence > first.sequence else {
                waiting.append(contentsOf: sorted)
                return
            }
            var merged: [Outgoing] = []
            merged.reserveCapacity(waiting.count + sorted.count)
            var i = 0, j = 0
            while i < waiting.count && j < sorted.count {
                if waiting[i].sequence <= sorted[j].sequence {
                    merged.append(waiting[i]); i += 1
                } else {
                    merged.append(sorted[j]); j += 1
                }
            }
            merged.append(contentsOf: waiting[i...])
            merged.append(contentsOf: sorted[j...])
            waiting = merged
        }
    }

    struct State {
        var nextToken: UInt64 = 1
        /// The records handed to librdkafka and not yet reported, by token. Starts small and grows with the
        /// load (a table sized for 65 536 up front held some 24 MB of resident memory once filled, whatever
        /// the load afterwards).
        var inFlight: [UInt64: Outgoing] = Dictionary(minimumCapacity: 4096)
        var lanes: [TopicPartition: Lane] = [:]
        /// Acknowledgements still awaited for input records that have a result and a dead letter.
        var partsLeft: [Position: Int] = [:]
        /// When each kind of log line was last written (``WallClock/monotonicNs()``) and how many were skipped since.
        var lastLog: [String: (atNs: Int64, skipped: Int)] = [:]
        /// The input partitions this member owns (``own(_:)``, ``release(_:)``): results of others are dropped.
        var owned: Set<TopicPartition> = []
        /// Records of each input partition taken from the state and being handed to librdkafka now (after the
        /// lock): ``release(_:)`` waits until none is, so nothing of a released partition is produced after it.
        var handing: [TopicPartition: Int] = [:]
        /// Whether the consumer's thread waits in ``ResultPublisher/waitForRoom(timeoutMs:)`` for ``inFlight``
        /// to fall below ``ResultPublisher/maxInFlightRecords``: the delivery report that brings it there
        /// signals ``ResultPublisher/room``.
        var roomWanted = false

        /// Counts `count` records of `tp` as being handed to librdkafka.
        mutating func beginHanding(_ tp: TopicPartition, _ count: Int = 1) {
            handing[tp, default: 0] += count
        }
    }
}
