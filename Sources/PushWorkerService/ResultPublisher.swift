import PushWorkerCore
import PushWorkerKafka
import Synchronization

/// Produces result records to the results topic (and dead letters to the dead-letter topic) and, as the
/// broker acknowledges them, marks their input record done so its offset can be stored (contract sections
/// 3 and 4). A record with a dead letter is done once both its result and its dead letter are acknowledged.
///
/// A record that cannot be enqueued (full local queue) or delivered (after librdkafka's own retries) is
/// kept in a backlog and produced again, never dropped.
final class ResultPublisher: Sendable {
    private struct Outgoing: Sendable {
        var record: KafkaOutgoingRecord
        var source: TopicPartition
        var offset: Int64
        var failures: Int
        /// The result's labels in `pushworker_results_total` (or `pushworker_dead_letters_total`), counted
        /// once acknowledged.
        var labels: ResultKey
        /// Whether this is the dead letter of the input record rather than its result.
        var isDeadLetter = false
        /// Whether the input record has a second record (its result and its dead letter) to wait for.
        var hasCompanion = false
    }

    /// An input record's position, for records waiting on more than one acknowledgement.
    private struct Position: Hashable {
        var partition: TopicPartition
        var offset: Int64
    }

    private struct State {
        var nextToken: UInt64 = 1
        var inFlight: [UInt64: Outgoing] = Dictionary(minimumCapacity: 65_536)
        var backlog = [Outgoing]()
        /// Acknowledgements still awaited for input records that have a result and a dead letter.
        var partsLeft: [Position: Int] = [:]
        var lastFailureLogMs: Int64 = 0
    }

    private let state = Mutex(State())
    private let producer: ProducerBox
    private let resultsTopic: String
    private let tracker: OffsetTracker
    private let logger: Logger
    private let metrics: ServiceMetrics
    private let onRetried: @Sendable (Int) -> Void

    /// Creates the publisher and its producer.
    /// - Parameters:
    ///   - storeOffsets: stores offsets whose results (and all earlier ones) are acknowledged.
    ///   - onDelivered: told of each acknowledged result record.
    ///   - onRetried: told how many records librdkafka reported undelivered (and that are produced again),
    ///     on each delivery round that has any.
    init(
        properties: KafkaConfiguration,
        resultsTopic: String,
        tracker: OffsetTracker,
        logger: Logger,
        logHandler: @escaping KafkaLogHandler,
        metrics: ServiceMetrics,
        storeOffsets: @escaping @Sendable ([TopicPartitionOffset]) -> Void,
        onDelivered: (@Sendable (KafkaOutgoingRecord) -> Void)?,
        onRetried: @escaping @Sendable (Int) -> Void
    ) throws {
        self.resultsTopic = resultsTopic
        self.tracker = tracker
        self.logger = logger
        self.metrics = metrics
        self.onRetried = onRetried
        let box = ProducerBox()
        self.producer = box
        box.producer = try KafkaProducer(configuration: properties, logHandler: logHandler, onDelivery: { [weak box] reports in
            box?.handler?(reports)
        }, onStatistics: { statistics in
            metrics.statistics(statistics, client: .producer)
        })
        box.handler = { [unowned self] reports in
            self.delivered(reports, storeOffsets: storeOffsets, onDelivered: onDelivered)
        }
    }

    /// Encodes and produces one result, keyed by the input's key, with `apns-id` and `traceparent` headers,
    /// and the input record's dead letter when there is one (``DeadLetterRecord``).
    func publish(_ result: ResultRecord, deadLetter: KafkaOutgoingRecord? = nil) {
        var headers: [KafkaHeader] = []
        // Byte for byte as the input had them (contract section 3), UTF-8 or not.
        if let apnsId = result.apnsIdHeader { headers.append(KafkaHeader(name: "apns-id", value: apnsId)) }
        if let traceparent = result.traceparentHeader { headers.append(KafkaHeader(name: "traceparent", value: traceparent)) }
        let source = TopicPartition(topic: result.source.topic, partition: result.source.partition)
        var outgoing = Outgoing(
            record: KafkaOutgoingRecord(topic: resultsTopic, key: result.key, value: result.jsonBytes(), headers: headers),
            source: source, offset: result.source.offset, failures: 0, labels: ResultKey(result))
        guard let deadLetter else {
            send(outgoing, fromBacklog: false)
            return
        }
        outgoing.hasCompanion = true
        var letter = outgoing
        letter.record = deadLetter
        letter.isDeadLetter = true
        // `+=`: a record read again (after a rebalance) while its earlier copies are still in flight waits
        // for all of them.
        state.withLock { $0.partsLeft[Position(partition: source, offset: result.source.offset), default: 0] += 2 }
        send(letter, fromBacklog: false)
        send(outgoing, fromBacklog: false)
    }

    /// How long ago the producer's poll thread last finished a round, or `nil` once closed (for liveness).
    var sinceLastPoll: Duration? { producer.producer?.sinceLastPoll }

    /// Results produced or waiting in the backlog, not yet acknowledged.
    var unacknowledged: Int { state.withLock { $0.inFlight.count + $0.backlog.count } }

    /// Produces the backlog again (called regularly by the consumer loop).
    func retryBacklog() {
        let backlog = state.withLock { state -> [Outgoing] in
            defer { state.backlog.removeAll() }
            return state.backlog
        }
        for (index, outgoing) in backlog.enumerated() where !send(outgoing, fromBacklog: true) {
            // Still full: keep the rest, in order, ahead of anything queued meanwhile.
            let rest = backlog[index...]
            state.withLock { $0.backlog.insert(contentsOf: rest, at: 0) }
            return
        }
    }

    /// Waits up to `timeoutMs` for every result to be acknowledged, then closes the producer.
    /// - Returns: the number of results still not acknowledged.
    func close(timeoutMs: Int) async -> Int {
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(timeoutMs))
        while unacknowledged > 0 && ContinuousClock.now < deadline {
            retryBacklog()
            try? await Task.sleep(for: .milliseconds(5))
        }
        let left = unacknowledged
        await producer.producer?.close(timeoutMs: 1000)
        return left
    }

    /// Produces one result, or puts it in the backlog (when librdkafka's queue is full, or behind results
    /// already waiting there, so results keep their order). Returns false when it went to the backlog.
    @discardableResult
    private func send(_ outgoing: Outgoing, fromBacklog: Bool) -> Bool {
        guard let producer = producer.producer else { return false }
        let token = state.withLock { state -> UInt64? in
            if !fromBacklog && !state.backlog.isEmpty {
                state.backlog.append(outgoing)
                return nil
            }
            let token = state.nextToken
            state.nextToken += 1
            state.inFlight[token] = outgoing
            return token
        }
        guard let token else { return false }
        do throws(KafkaError) {
            try producer.produce(outgoing.record, token: token)
            return true
        } catch {
            _ = state.withLock { $0.inFlight.removeValue(forKey: token) }
            if error.code != .queueFull { logFailure(outgoing.isDeadLetter ? "cannot produce a dead letter; kept for retry" : "cannot produce a result; kept for retry", error, topic: outgoing.record.topic) }
            if !fromBacklog { state.withLock { $0.backlog.append(outgoing) } }
            return false
        }
    }

    private func delivered(
        _ reports: [KafkaDeliveryReport],
        storeOffsets: @Sendable ([TopicPartitionOffset]) -> Void,
        onDelivered: (@Sendable (KafkaOutgoingRecord) -> Void)?
    ) {
        var acknowledged: [(TopicPartition, Int64)] = []
        acknowledged.reserveCapacity(reports.count)
        var labels: [ResultKey] = []
        labels.reserveCapacity(reports.count)
        var deadLetterLabels: [ResultKey] = []
        var failed: [(Outgoing, KafkaError)] = []
        var records: [KafkaOutgoingRecord] = []
        state.withLock { state in
            for report in reports {
                guard var outgoing = state.inFlight.removeValue(forKey: report.token) else { continue }
                if let error = report.error {
                    outgoing.failures += 1
                    failed.append((outgoing, error))
                    continue
                }
                if outgoing.isDeadLetter {
                    deadLetterLabels.append(outgoing.labels)
                } else {
                    labels.append(outgoing.labels)
                    if onDelivered != nil { records.append(outgoing.record) }
                }
                if outgoing.hasCompanion {
                    let position = Position(partition: outgoing.source, offset: outgoing.offset)
                    let left = (state.partsLeft[position] ?? 1) - 1
                    state.partsLeft[position] = left > 0 ? left : nil
                    if left > 0 { continue }
                }
                acknowledged.append((outgoing.source, outgoing.offset))
            }
        }
        if !acknowledged.isEmpty {
            let moved = tracker.complete(acknowledged)
            if !moved.isEmpty { storeOffsets(moved) }
        }
        metrics.resultsAcknowledged(labels)
        metrics.deadLettersAcknowledged(deadLetterLabels)
        if let onDelivered { records.forEach(onDelivered) }
        if let (outgoing, error) = failed.first {
            onRetried(failed.count)
            metrics.deliveryRetries.increment(by: Double(failed.count))
            logFailure("\(failed.count) record(s) not delivered; producing them again", error, topic: outgoing.record.topic)
            state.withLock { $0.backlog.append(contentsOf: failed.map(\.0)) }
        }
        retryBacklog()
    }

    private func logFailure(_ message: String, _ error: KafkaError, topic: String) {
        let now = Clock.nowMs()
        let shouldLog = state.withLock { state -> Bool in
            guard now - state.lastFailureLogMs >= 1000 else { return false }
            state.lastFailureLogMs = now
            return true
        }
        if shouldLog { logger.warning(message, metadata: ["error": error.message, "topic": topic]) }
    }
}

/// Lets the producer's delivery callback reach the publisher created after it.
///
/// `@unchecked Sendable`: both properties are set once during ``ResultPublisher``'s `init`, before any
/// record is produced (so before any delivery report can arrive), and only read afterwards.
final class ProducerBox: @unchecked Sendable {
    var producer: KafkaProducer?
    var handler: (@Sendable ([KafkaDeliveryReport]) -> Void)?
}
