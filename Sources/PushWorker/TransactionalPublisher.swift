import Dispatch
import Foundation
import PushWorkerCore
import PushWorkerKafka
import Synchronization

/// The exactly-once results mode's publisher (``ExactlyOnceConfiguration``): an input record's outputs
/// (its result, and its dead letter when there is one) and the input offsets they complete are written in
/// Kafka transactions (read-process-write: KIP-98, KIP-447; librdkafka's transactional producer, docs/guarantees.md "Exactly-once results").
///
/// Outputs are buffered as they are published. One owner, a dedicated thread, runs every transactional
/// call (librdkafka refuses produce calls while a commit runs, and allows one transactional call at a
/// time): once the oldest buffered output is ``ExactlyOnceConfiguration/commitInterval`` old, or
/// ``ExactlyOnceConfiguration/maxRecordsPerTransaction`` input records wait, or the consumer asks
/// (``commitNow(timeoutMs:)``, at a revocation), it takes the whole buffer and runs
/// `begin_transaction` → produce the outputs → `send_offsets_to_transaction` with the offsets now
/// committable (per partition, one past the highest input record whose outputs are taken, with every
/// earlier one of its partition, ``OffsetTracker``) and the consumer's group metadata →
/// `commit_transaction`. Only outputs of records below their partition's committable offset go in; those
/// of records finished out of order wait (``State/held``) for the earlier records, so that committed
/// outputs and committed offsets always match.
///
/// Errors, by librdkafka's class (``KafkaTransactionError/Code``):
/// - retriable: the same call again, with the same arguments (counted in
///   `pushworker_transactions_retried_total`); after the close's timeout they count as abortable;
/// - abortable (and librdkafka's unclassed errors from `begin`, and produce calls refused): the
///   transaction is aborted, and the consumer loop rewinds every assigned partition to the offset after
///   its last committed transaction (``rewindTargets(_:)``), cuts short the jobs of those records, and drops
///   their buffered outputs; the records are consumed and run again. The next transaction waits a backoff
///   (100 ms doubling to 2 s while aborts follow each other);
/// - fatal (e.g. `_FENCED`: another producer with this `transactional.id` took over): the service stops
///   with the error (``failure``); nothing more is committed. A fenced member must not go on, and a new
///   producer with the same id would fence the member that fenced it, in turn.
///
/// Results are counted as delivered (`onDelivered`, `pushworker_results_total`) once their transaction
/// commits. Worker side effects stay at-least-once: an aborted transaction's records run again.
final class TransactionalPublisher: OutputPublisher {
    /// One output of an input record.
    struct Output: Sendable {
        /// What an output is.
        enum Kind: Sendable { case result, deadLetter, retryTopicCopy }
        var record: KafkaOutgoingRecord
        var kind: Kind
        /// 0 as published, then ``ResultPublisher/replacement(of:result:isDeadLetter:stage:error:)``'s stage.
        var stage = 0
        var isDeadLetter: Bool { kind == .deadLetter }
    }

    /// An input record's outputs, all written in one transaction.
    struct Entry: Sendable {
        var source: TopicPartition
        var offset: Int64
        var outputs: [Output]
        /// The result (to count and report once committed, and to build a replacement from).
        var result: ResultRecord?
        /// When it was published (``WallClock/monotonicNs()``).
        var publishedAtNs: Int64
    }

    struct State {
        var owned: Set<TopicPartition> = []
        /// Entries waiting for the next transaction, in publish order.
        var buffer: [Entry] = []
        /// The entries of the transaction being run, or `nil` between transactions.
        var running: [Entry]?
        /// Entries done (marked in the tracker) but above their partition's committable offset: an earlier
        /// record of the partition is still running. They wait for it, so that a transaction never commits
        /// an output whose input offset it does not commit too (a rewind, a restart or the next owner would
        /// run that input again and commit a second output).
        var held: [Entry] = []
        /// Per owned partition, the offset to rewind to after an abort: the offset committed by this
        /// member's last committed transaction, else the first offset taken since the assignment.
        var resumeAt: [TopicPartition: Int64] = [:]
        /// ``commitNow(timeoutMs:)`` requests made, and the last one a finished transaction covered.
        var commitRequested: UInt64 = 0
        var commitServed: UInt64 = 0
        /// Set after an abort until the consumer loop has rewound (``rewound()``): no transaction meanwhile.
        var rewindRequested = false
        /// The fatal error that stopped the owner, if any.
        var failure: KafkaTransactionError?
        /// Set by ``close(timeoutMs:cutShort:cutShortTimeoutMs:)``: commit what is left, then end.
        var stopping = false
        /// After this time (``WallClock/monotonicNs()``) a retriable error counts as abortable (closing).
        var giveUpAtNs: Int64 = .max
        /// Whether the owner thread has ended.
        var finished = false
        /// Not before this time is the next transaction begun (backoff after aborts).
        var retryAtNs: Int64 = 0
        /// Aborts in a row.
        var aborts = 0

        /// Drops the buffered entries of `partitions`; returns how many results were dropped.
        mutating func dropBuffered(_ partitions: Set<TopicPartition>) -> Int {
            let before = buffer.count + held.count
            buffer.removeAll { partitions.contains($0.source) }
            held.removeAll { partitions.contains($0.source) }
            return before - buffer.count - held.count
        }
    }

    /// The first backoff after an abort: 100 ms, doubling with each abort in a row.
    static let firstBackoff: Duration = .milliseconds(100)
    /// The longest backoff after aborts: 2 s.
    static let maximumBackoff: Duration = .seconds(2)
    /// The longest ``release(_:)`` waits for the transaction being run: 10 s.
    static let releaseWaitLimit: Duration = .seconds(10)
    /// How long `rd_kafka_init_transactions` waits before it is called again: 10 s (well inside the 30 s
    /// without a round after which liveness fails, ``ServiceHealth/stallThreshold``).
    static let initTimeoutMs: Int32 = 10_000

    let state = Mutex(State())
    let wake = DispatchSemaphore(value: 0)
    let heartbeat = Heartbeat()
    let producer: KafkaProducer
    /// The consumer whose group the offsets are committed for. Weak: the consumer is released on a thread
    /// of its own once the pipeline ends (``ConsumerRelease``); this must not keep it.
    let consumer: WeakConsumer
    let resultsTopic: String
    let tracker: OffsetTracker
    let settings: ExactlyOnceConfiguration
    let logger: PushWorkerLogger
    let metrics: ServiceMetrics
    let onDelivered: (@Sendable (KafkaOutgoingRecord) -> Void)?
    let onReplaced: @Sendable () -> Void
    let onTransaction: @Sendable (TransactionEvent) -> Void

    /// What happened to a transaction or a transactional call, for the service's statistics.
    enum TransactionEvent: Sendable { case committed, aborted, retried }

    /// Creates the publisher and its transactional producer, and starts the owner thread, which first
    /// calls `rd_kafka_init_transactions` (fencing an earlier producer with the same `transactional.id`).
    /// - Parameters:
    ///   - properties: the producer's librdkafka properties, `transactional.id` included.
    ///   - consumer: the consumer the input records come from (its group metadata goes with the offsets).
    ///   - onDelivered: told of each result record once its transaction is committed.
    ///   - onReplaced: told of each output replaced by a smaller one because it can never be produced.
    ///   - onTransaction: told of each commit, abort and retried call.
    /// - Throws: ``KafkaError`` if the producer cannot be created.
    init(
        properties: KafkaConfiguration, consumer: KafkaGroupMembers, resultsTopic: String, tracker: OffsetTracker,
        settings: ExactlyOnceConfiguration, logger: PushWorkerLogger, logHandler: @escaping KafkaLogHandler, metrics: ServiceMetrics,
        onDelivered: (@Sendable (KafkaOutgoingRecord) -> Void)?, onReplaced: @escaping @Sendable () -> Void = {},
        onTransaction: @escaping @Sendable (TransactionEvent) -> Void = { _ in }
    ) throws {
        self.consumer = WeakConsumer(consumer)
        self.resultsTopic = resultsTopic
        self.tracker = tracker
        self.settings = settings
        self.logger = logger
        self.metrics = metrics
        self.onDelivered = onDelivered
        self.onReplaced = onReplaced
        self.onTransaction = onTransaction
        // Delivery reports are not needed: commit_transaction waits for every record of its transaction
        // and fails (abortable) if one was not delivered.
        producer = try KafkaProducer(configuration: properties, logHandler: logHandler, onStatistics: { statistics in
            metrics.statistics(statistics, client: .producer)
        })
        let thread = Thread { [self] in self.runOwner() }
        thread.name = "pushworker-transactions"
        thread.start()
    }

    // MARK: OutputPublisher

    /// Fetches the output topics' metadata in the background (``ResultPublisher/prepareInBackground(_:on:logger:timeoutMs:)``):
    /// the first transaction then adds its partitions at once rather than after librdkafka's next topic scan.
    func prepareOutputTopics(_ topics: [String], timeoutMs: Int32) {
        ResultPublisher.prepareInBackground(topics, on: producer, logger: logger, timeoutMs: timeoutMs)
    }

    func own(_ partitions: [TopicPartition]) {
        state.withLock { state in
            state.owned.formUnion(partitions)
            for tp in partitions { state.resumeAt[tp] = nil }
        }
    }

    @discardableResult
    func release(_ partitions: [TopicPartition]) -> Int {
        let set = Set(partitions)
        let dropped = state.withLock { state -> Int in
            state.owned.subtract(set)
            for tp in set { state.resumeAt[tp] = nil }
            return state.dropBuffered(set)
        }
        // The transaction being run may hold their outputs: wait for it to end (committed or aborted), at
        // most ``releaseWaitLimit`` (a commit retried while the broker is away). Past it, the transaction
        // may still commit their outputs together with their offsets, or be refused and aborted.
        let deadline = ContinuousClock.now.advanced(by: Self.releaseWaitLimit)
        while state.withLock({ state in state.running?.contains { set.contains($0.source) } ?? false }) && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.001)
        }
        return dropped
    }

    /// Buffers the result (and its dead letter or retry-topic copy before it) for the next transaction;
    /// dropped when its partition is not owned (``release(_:)``).
    func publish(_ result: ResultRecord, deadLetter: KafkaOutgoingRecord?, retry: KafkaOutgoingRecord?) {
        var headers: [KafkaHeader] = []
        // Byte for byte as the input had them (contract section 3), UTF-8 or not.
        if let apnsId = result.apnsIdHeader { headers.append(KafkaHeader(name: "apns-id", value: apnsId)) }
        if let traceparent = result.traceparentHeader { headers.append(KafkaHeader(name: "traceparent", value: traceparent)) }
        var outputs: [Output] = []
        if let deadLetter { outputs.append(Output(record: deadLetter, kind: .deadLetter)) }
        if let retry { outputs.append(Output(record: retry, kind: .retryTopicCopy)) }
        outputs.append(Output(record: KafkaOutgoingRecord(topic: resultsTopic, key: result.key, value: result.jsonBytes(), headers: headers), kind: .result))
        let source = TopicPartition(topic: result.source.topic, partition: result.source.partition)
        publish(Entry(source: source, offset: result.source.offset, outputs: outputs, result: result, publishedAtNs: WallClock.monotonicNs()))
    }

    /// Buffers `record`, the input record's copy for the retry topic standing in for its result, for the
    /// next transaction, with the input's offset.
    func forward(_ record: KafkaOutgoingRecord, source: RecordSource) {
        let partition = TopicPartition(topic: source.topic, partition: source.partition)
        publish(Entry(source: partition, offset: source.offset, outputs: [Output(record: record, kind: .retryTopicCopy)], result: nil, publishedAtNs: WallClock.monotonicNs()))
    }

    /// Buffers a batch of input records' outputs, one record after another.
    func publish(_ batch: [Publication]) { publishEach(batch) }

    /// Buffers a batch of input records' outputs at once (buffering is cheap; the transactions' owner
    /// thread produces them).
    func submit(_ batch: [Publication]) { publishEach(batch) }

    /// Returns at once: ``submit(_:)`` buffers at once, and the transactions' bound holds the buffer.
    func waitForRoom(timeoutMs: Int) {}

    /// Buffers an input record's outputs for the next transaction (all of them in the same one).
    func publish(_ entry: Entry) {
        let (accepted, full) = state.withLock { state -> (Bool, Bool) in
            guard state.owned.contains(entry.source) else { return (false, false) }
            state.buffer.append(entry)
            // Wake the owner once, when the buffer reaches the bound.
            return (true, state.buffer.count == settings.maxRecordsPerTransaction)
        }
        if !accepted {
            logger.debug("result dropped: its partition is no longer assigned to this member; its next owner reads the record again", metadata: [
                "partition": "\(entry.source)", "offset": String(entry.offset),
            ])
        }
        if full { wake.signal() }
    }

    /// Nothing waits for a retry outside the transactions.
    func retryBacklog() {}

    /// None: a transaction that fails is aborted and all assigned partitions are rewound together.
    var failingPartitions: Set<TopicPartition> { [] }

    var unacknowledged: Int {
        state.withLock { state in
            state.buffer.reduce(0) { $0 + $1.outputs.count } + state.held.reduce(0) { $0 + $1.outputs.count }
                + (state.running?.reduce(0) { $0 + $1.outputs.count } ?? 0)
        }
    }

    /// How long the oldest output waiting for a transaction (buffered or in the one being run) has waited.
    /// Held outputs (``State/held``) do not count: they wait for an earlier record's job, bounded by its
    /// budget, not for the broker.
    var oldestUnacknowledgedAge: Duration? {
        let oldest = state.withLock { state -> Int64? in
            [state.running?.first?.publishedAtNs, state.buffer.first?.publishedAtNs].compactMap { $0 }.min()
        }
        return oldest.map { .nanoseconds(max(0, WallClock.monotonicNs() - $0)) }
    }

    /// The staler of the producer's poll thread and the transaction owner's round (a transactional call
    /// blocks at most ``ExactlyOnceConfiguration/operationTimeout`` before the owner beats again).
    var sinceLastPoll: Duration? {
        guard let poll = producer.sinceLastPoll, let owner = heartbeat.sinceLastBeat else { return nil }
        return max(poll, owner)
    }

    func close(timeoutMs: Int, cutShort: @Sendable () -> Bool, cutShortTimeoutMs: Int) async -> Int {
        var deadline = ContinuousClock.now.advanced(by: .milliseconds(timeoutMs))
        state.withLock { state in
            state.stopping = true
            state.giveUpAtNs = WallClock.monotonicNs() + Int64(timeoutMs) * 1_000_000
        }
        wake.signal()
        var wasCut = false
        while !state.withLock({ $0.finished }) && ContinuousClock.now < deadline {
            if !wasCut && cutShort() {
                wasCut = true
                deadline = min(deadline, ContinuousClock.now.advanced(by: .milliseconds(cutShortTimeoutMs)))
                state.withLock { $0.giveUpAtNs = min($0.giveUpAtNs, WallClock.monotonicNs() + Int64(cutShortTimeoutMs) * 1_000_000) }
            }
            await Self.pause(milliseconds: 5)
        }
        let left = unacknowledged
        // Past the deadline: the owner ends at its next decision (give-up time passed), leaving the rest.
        state.withLock { $0.giveUpAtNs = 0 }
        wake.signal()
        await producer.close(timeoutMs: 1000)
        return left
    }

    // MARK: Consumer loop

    /// The fatal error that stopped the transactions, if any: the consumer loop throws it (the service stops).
    var failure: KafkaTransactionError? { state.withLock { $0.failure } }

    /// Whether a transaction was aborted and the consumer loop must rewind (``rewindTargets(_:)``, ``rewound()``).
    var rewindRequested: Bool { state.withLock { $0.rewindRequested && !$0.stopping } }

    /// Notes records taken from the consumer: the first offset taken of a partition since its assignment
    /// is where it rewinds to until a transaction of this member commits an offset for it.
    func noteTaken(_ records: [(TopicPartition, Int64)]) {
        state.withLock { state in
            for (tp, offset) in records where state.resumeAt[tp] == nil && state.owned.contains(tp) { state.resumeAt[tp] = offset }
        }
    }

    /// Drops the buffered outputs of `partitions` (their jobs were cut short for a rewind) and returns the
    /// offsets to seek each to: the offset after this member's last committed transaction, else the first
    /// offset taken since the assignment. Partitions with neither took nothing: no seek.
    ///
    /// Not the group's committed offset (`rd_kafka_committed`): while this member owns a partition, it is
    /// the only one that commits its offsets, so the two agree on a real broker, and this needs no round
    /// trip; librdkafka 2.0.2's mock does not store transactional offsets, where the committed offset
    /// would re-run every record since the group's last plain commit.
    func rewindTargets(_ partitions: [TopicPartition]) -> [TopicPartitionOffset] {
        state.withLock { state in
            _ = state.dropBuffered(Set(partitions))
            return partitions.compactMap { tp in state.resumeAt[tp].map { TopicPartitionOffset(tp, offset: $0) } }
        }
    }

    /// The consumer loop has rewound: transactions go on (after the backoff).
    func rewound() {
        state.withLock { $0.rewindRequested = false }
        wake.signal()
    }

    /// Asks the owner to run a transaction now with everything buffered, and waits (the calling thread:
    /// the consumer's, in the rebalance callback) until it has ended, at most `timeoutMs`. Returns at once
    /// when a rewind is pending (nothing may be committed before it), after a fatal error, or once closed.
    /// - Returns: whether everything buffered at the call was committed in time (also when the owner had
    ///   already ended after committing what was left); false when a transaction aborted or failed
    ///   fatally, a rewind was pending, or the wait ran out.
    @discardableResult
    func commitNow(timeoutMs: Int) -> Bool {
        enum Start { case done, refused, wait(UInt64, aborts: Int) }
        let start = state.withLock { state -> Start in
            if state.failure != nil || state.rewindRequested { return .refused }
            if state.finished { return state.buffer.isEmpty ? .done : .refused }
            state.commitRequested += 1
            return .wait(state.commitRequested, aborts: state.aborts)
        }
        guard case .wait(let request, let abortsBefore) = start else {
            if case .done = start { return true }
            return false
        }
        wake.signal()
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(timeoutMs))
        while ContinuousClock.now < deadline {
            let outcome = state.withLock { state -> Bool? in
                if state.failure != nil || state.rewindRequested || state.aborts > abortsBefore { return false }
                if state.commitServed >= request { return true }
                return state.finished ? state.buffer.isEmpty : nil
            }
            if let outcome { return outcome }
            Thread.sleep(forTimeInterval: 0.001)
        }
        return false
    }

    var operationTimeoutMs: Int32 { Int32(clamping: settings.operationTimeout.wholeMilliseconds) }

    /// Sleeps about `milliseconds` without holding a thread, in a cancelled task too.
    static func pause(milliseconds: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { continuation.resume() }
        }
    }
}

/// A weak reference to the consumer (see ``TransactionalPublisher``'s `consumer`).
final class WeakConsumer: Sendable {
    let box: Mutex<Weak>
    struct Weak: @unchecked Sendable {
        // `@unchecked Sendable`: a weak reference to a `Sendable` class, only read and written under the Mutex.
        weak var consumer: KafkaGroupMembers?
    }
    init(_ consumer: KafkaGroupMembers) { box = Mutex(Weak(consumer: consumer)) }
    var value: KafkaGroupMembers? { box.withLock { $0.consumer } }
}
