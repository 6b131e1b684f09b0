import Dispatch
import Foundation
import PushWorkerCore
import PushWorkerKafka
import Synchronization

/// Produces result records to the results topic (and dead letters to the dead-letter topic) and, as the
/// broker acknowledges them, marks their input record done so its offset can be stored (contract sections
/// 3 and 4). A record with a dead letter is done once both its result and its dead letter are acknowledged.
///
/// Records are kept per input partition (a *lane*): a record of input partition P goes straight to
/// librdkafka unless P already has records waiting, so a partition that cannot deliver holds back only
/// itself. What happens on a failure depends on its ``ProduceFailure`` class:
/// - ``ProduceFailure/transient``, ``ProduceFailure/topicRefused``, ``ProduceFailure/fatal``: the record
///   is kept (never dropped) at its place in its lane, ahead of every record of the lane not yet sent.
///   After a backoff (100 ms doubling to 2 s) the lane sends its oldest record alone (a probe); once the
///   broker acknowledges it, the rest follow in order. `_QUEUE_FULL` only waits for the next round.
/// - ``ProduceFailure/recordRejected`` (the record can never be produced, e.g. larger than
///   `message.max.bytes`): it is replaced at once, at the same place, by a smaller record
///   (``replacement(of:result:isDeadLetter:stage:error:)``); when even the smallest is rejected it is
///   kept as above.
///
/// Ordering: within a lane records are produced in the order they were published; a record of a key
/// goes to one results partition, where librdkafka (idempotent) keeps their order across its own
/// retries. A record that librdkafka reports undelivered is produced again before every record of its
/// lane published after the report, but records of its lane already handed to librdkafka before the
/// report may be written before it.
final class ResultPublisher: Sendable {
    /// The first backoff of a lane after a failure: 100 ms, doubling with each failure in a row.
    static let firstBackoff: Duration = .milliseconds(100)
    /// The longest backoff of a lane: 2 s.
    static let maximumBackoff: Duration = .seconds(2)

    let state = Mutex(State())
    /// Batches submitted (``submit(_:)``) and not yet published, for the publishing thread.
    let queue = PublicationQueue()
    /// The next ``Outgoing/sequence`` (publish order over all lanes).
    let nextSequence = Atomic<UInt64>(1)
    let producer: ProducerBox
    let resultsTopic: String
    let tracker: OffsetTracker
    let logger: PushWorkerLogger
    let metrics: ServiceMetrics
    let onRetried: @Sendable (Int) -> Void
    let onReplaced: @Sendable () -> Void

    /// Creates the publisher and its producer.
    /// - Parameters:
    ///   - storeOffsets: stores offsets whose results (and all earlier ones) are acknowledged.
    ///   - onDelivered: told of each acknowledged result record.
    ///   - onRetried: told how many records librdkafka reported undelivered (and that are produced again),
    ///     on each delivery round that has any.
    ///   - onReplaced: told of each record replaced by a smaller one because it can never be produced.
    init(
        properties: KafkaConfiguration,
        resultsTopic: String,
        tracker: OffsetTracker,
        logger: PushWorkerLogger,
        logHandler: @escaping KafkaLogHandler,
        metrics: ServiceMetrics,
        storeOffsets: @escaping @Sendable ([TopicPartitionOffset]) -> Void,
        onDelivered: (@Sendable (KafkaOutgoingRecord) -> Void)?,
        onRetried: @escaping @Sendable (Int) -> Void,
        onReplaced: @escaping @Sendable () -> Void = {}
    ) throws {
        self.resultsTopic = resultsTopic
        self.tracker = tracker
        self.logger = logger
        self.metrics = metrics
        self.onRetried = onRetried
        self.onReplaced = onReplaced
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
        // The publishing thread (``submit(_:)``): holds the publisher only while it publishes, so that the
        // publisher's `deinit` (which closes the queue and so ends the thread) can run.
        let queue = self.queue
        let thread = Thread { [weak self] in
            while let batches = queue.next() {
                let count = batches.reduce(0) { $0 + $1.count }
                if let self { batches.forEach(self.publish) }
                queue.done(count)
            }
        }
        thread.name = "pushworker-publish"
        thread.start()
    }

    deinit { queue.close() }

    /// Hands a batch to the publishing thread, which publishes it (``publish(_:)``) in order with the
    /// batches before it: the caller goes on at once. Once the publisher is closing, publishes at once.
    func submit(_ batch: [Publication]) {
        if !queue.push(batch) { publish(batch) }
    }

    /// The most publications waiting for the publishing thread before the consumer's thread waits for it
    /// (``waitForRoom(timeoutMs:)``): about four of the consumer loop's batches.
    static let maxQueuedPublications = 8192

    /// The most records (results, dead letters, retry-topic copies) handed to librdkafka and not yet
    /// reported before the consumer's thread waits for their acknowledgements (``waitForRoom(timeoutMs:)``).
    /// Each is held twice until then, by the publisher (to produce it again) and by librdkafka (its copy),
    /// about 1.5 KB with a noop worker's result: unbounded, a burst of 20 000 unacknowledged results made
    /// the peak RSS of the benchmark vary by 30 MB. A record in a failing lane is not counted (it waits in
    /// its lane, and its input partition is paused instead).
    static let maxInFlightRecords = 8192

    /// Signalled by the delivery report that brings the records in flight below ``maxInFlightRecords``
    /// while the consumer's thread waits (``State/roomWanted``).
    let room = DispatchSemaphore(value: 0)

    /// Waits, up to `timeoutMs` in all, while the publishing thread has ``maxQueuedPublications`` or more
    /// publications to get through, and then while ``maxInFlightRecords`` or more records are handed to
    /// librdkafka and not yet reported. Returns at once when neither is so. The consumer loop comes round
    /// after the wait either way (to serve the consumer, and to take records at a slower pace while the
    /// broker does not acknowledge: `maxBufferedRecords` then pauses the partitions); the partitions are
    /// never paused for this, so librdkafka's prefetched records stay. Blocking: the consumer's thread.
    func waitForRoom(timeoutMs: Int) {
        let start = ContinuousClock.now
        queue.waitForRoom(below: Self.maxQueuedPublications, timeoutMs: timeoutMs)
        let left = timeoutMs - Int((ContinuousClock.now - start) / .milliseconds(1))
        guard left > 0 else { return }
        let mustWait = state.withLock { state -> Bool in
            guard state.inFlight.count >= Self.maxInFlightRecords else { return false }
            state.roomWanted = true
            return true
        }
        guard mustWait else { return }
        if room.wait(timeout: .now() + .milliseconds(left)) == .timedOut {
            // Not signalled in time: withdraw the wish; a signal sent meanwhile is taken back too.
            let signalled = state.withLock { state -> Bool in
                defer { state.roomWanted = false }
                return !state.roomWanted
            }
            if signalled { room.wait() }
        }
    }

    /// Fetches the metadata of the output topics (the results topic and the dead-letter topic) on a
    /// thread of its own, without waiting for it (``KafkaProducer/prepareTopic(_:timeoutMs:)``), so that
    /// the first results are produced at once rather than after librdkafka's next topic scan (up to 1 s,
    /// during which no offset can be committed). A failure (broker unreachable, topic refused) is logged
    /// at debug level and changes nothing else: librdkafka learns the topic as it would have.
    func prepareOutputTopics(_ topics: [String], timeoutMs: Int32) {
        guard let producer = producer.producer else { return }
        Self.prepareInBackground(topics, on: producer, logger: logger, timeoutMs: timeoutMs)
    }

    /// ``KafkaProducer/prepareTopic(_:timeoutMs:)`` for each of `topics`, on a thread of its own (the
    /// requests block); failures are logged at debug level. Shared by both output publishers.
    static func prepareInBackground(_ topics: [String], on producer: KafkaProducer, logger: PushWorkerLogger, timeoutMs: Int32) {
        Thread.detachNewThread {
            for topic in topics {
                do {
                    try producer.prepareTopic(topic, timeoutMs: timeoutMs)
                } catch {
                    logger.debug("output topic metadata not fetched at start; librdkafka fetches it when it is first produced to", metadata: ["topic": topic, "error": "\(error)"])
                }
            }
        }
    }

    /// Notes partitions assigned to this member: their results are produced from now on.
    func own(_ partitions: [TopicPartition]) {
        state.withLock { $0.owned.formUnion(partitions) }
    }

    /// Notes partitions revoked from or lost by this member, before they are released to the group: from
    /// now on no result or dead letter of theirs is produced. Results published later (a job whose outcome
    /// was decided as it was cut short) are dropped, and so are the records of their lanes still waiting to
    /// be produced again; their offsets are not committed, so the partition's next owner reads those
    /// records again. Records already handed to librdkafka may still be delivered. Waits (briefly, on the
    /// calling thread: the consumer's) until no record of theirs is being handed to librdkafka.
    /// - Returns: how many records were dropped from the lanes.
    @discardableResult
    func release(_ partitions: [TopicPartition]) -> Int {
        let set = Set(partitions)
        state.withLock { $0.owned.subtract(set) }
        // No record of theirs starts being handed over from now on (both places check `owned` under the
        // lock); wait for those caught mid-call, which may put records back in their lanes. A producev call
        // takes microseconds: this loop ends at once but for a thread caught mid-call.
        while state.withLock({ state in set.contains { state.handing[$0, default: 0] > 0 } }) {
            Thread.sleep(forTimeInterval: 0.001)
        }
        return state.withLock { state -> Int in
            var dropped = 0
            for tp in set {
                guard var lane = state.lanes[tp] else { continue }
                dropped += lane.waiting.filter { !$0.isDeadLetter && !$0.isRetryTopicCopy }.count
                lane.waiting.removeAll()
                lane.failing = false
                lane.failures = 0
                state.lanes[tp] = lane.probe == nil && !lane.draining ? nil : lane
            }
            return dropped
        }
    }

    /// Marks `count` records of `tp` as handed to librdkafka (see ``State/handing``).
    func endHanding(_ tp: TopicPartition, _ count: Int = 1) {
        state.withLock { state in
            let left = state.handing[tp, default: 0] - count
            state.handing[tp] = left > 0 ? left : nil
        }
    }

    /// Encodes and produces one result, keyed by the input's key, with `apns-id` and `traceparent` headers,
    /// and the input record's dead letter (``DeadLetterRecord``) or its copy for the retry topic
    /// (``RetryRecord``) when there is one: the input record is done once both are acknowledged. A result
    /// of an input partition this member does not own (``release(_:)``) is dropped.
    func publish(_ result: ResultRecord, deadLetter: KafkaOutgoingRecord? = nil, retry: KafkaOutgoingRecord? = nil) {
        publish([.result(result, deadLetter: deadLetter, retry: retry)])
    }

    /// Produces `record`, a copy of the input record at `source` for the retry topic that stands in for its
    /// result for now (``RetryRecord``: a scheduled push, a record following a retry of its key): the input
    /// record is done once it is acknowledged. Dropped, as a result would be, when this member no longer
    /// owns `source`'s partition.
    func forward(_ record: KafkaOutgoingRecord, source: RecordSource) {
        publish([.forward(record, source: source)])
    }

    /// Publishes a batch, in order, as ``publish(_:deadLetter:retry:)`` and ``forward(_:source:)`` would one
    /// by one: every result is encoded first, then one locked pass drops what this member no longer owns,
    /// gives the rest their tokens (or puts them behind their lane's waiting records), and a second one,
    /// after producing, ends their handing over.
    func publish(_ batch: [Publication]) {
        let now = WallClock.monotonicNs()
        var outgoings: [Outgoing] = []
        outgoings.reserveCapacity(batch.count)
        for publication in batch {
            switch publication {
            case .result(let result, let deadLetter, let retry):
                var headers: [KafkaHeader] = []
                // Byte for byte as the input had them (contract section 3), UTF-8 or not.
                if let apnsId = result.apnsIdHeader { headers.append(KafkaHeader(name: "apns-id", value: apnsId)) }
                if let traceparent = result.traceparentHeader { headers.append(KafkaHeader(name: "traceparent", value: traceparent)) }
                let source = TopicPartition(topic: result.source.topic, partition: result.source.partition)
                // Two numbers: the companion (when there is one) goes before its result.
                let sequence = nextSequence.wrappingAdd(2, ordering: .relaxed).oldValue
                var outgoing = Outgoing(
                    record: KafkaOutgoingRecord(topic: resultsTopic, key: result.key, value: result.jsonBytes(), headers: headers),
                    source: source, offset: result.source.offset, labels: ResultKey(result), sequence: sequence + 1, publishedAtNs: now,
                    result: result)
                if let companionRecord = deadLetter ?? retry {
                    outgoing.hasCompanion = true
                    var companion = Outgoing(
                        record: companionRecord, source: source, offset: outgoing.offset, labels: outgoing.labels, sequence: sequence,
                        publishedAtNs: now)
                    companion.hasCompanion = true
                    companion.isDeadLetter = deadLetter != nil
                    companion.isRetryTopicCopy = deadLetter == nil
                    outgoings.append(companion)
                }
                outgoings.append(outgoing)
            case .forward(let record, let source):
                let partition = TopicPartition(topic: source.topic, partition: source.partition)
                let sequence = nextSequence.wrappingAdd(2, ordering: .relaxed).oldValue
                var outgoing = Outgoing(
                    record: record, source: partition, offset: source.offset,
                    labels: ResultKey(type: nil, result: .noData, reason: nil), sequence: sequence, publishedAtNs: now)
                outgoing.isRetryTopicCopy = true
                outgoings.append(outgoing)
            }
        }
        enqueue(outgoings)
    }

    /// How long ago the producer's poll thread last finished a round, or `nil` once closed (for liveness).
    var sinceLastPoll: Duration? { producer.producer?.sinceLastPoll }

    /// Results produced or waiting to be produced, not yet acknowledged.
    var unacknowledged: Int {
        // The queue first: a batch leaves it only once published, so nothing falls between the two counts.
        let queued = queue.waiting
        return queued + state.withLock { $0.inFlight.count + $0.lanes.values.reduce(0) { $0 + $1.waiting.count } }
    }

    /// The input partitions whose lane is failing: a record of theirs was not delivered and no probe has
    /// been acknowledged since. The consumer pauses them (no point taking more of their records).
    var failingPartitions: Set<TopicPartition> {
        state.withLock { state in Set(state.lanes.compactMap { $0.value.failing ? $0.key : nil }) }
    }

    /// How long the oldest result (or dead letter) not yet acknowledged has waited since it was published,
    /// or `nil` when every one is acknowledged. Scans the records in flight: for scrapes and probes, not
    /// for hot paths.
    var oldestUnacknowledgedAge: Duration? {
        let oldest = state.withLock { state -> Int64? in
            var oldest: Int64?
            for outgoing in state.inFlight.values where outgoing.publishedAtNs < (oldest ?? .max) { oldest = outgoing.publishedAtNs }
            for lane in state.lanes.values {
                // Waiting records are in publish order: the first is the lane's oldest.
                if let first = lane.waiting.first, first.publishedAtNs < (oldest ?? .max) { oldest = first.publishedAtNs }
            }
            return oldest
        }
        return oldest.map { .nanoseconds(max(0, WallClock.monotonicNs() - $0)) }
    }

    /// Produces the lanes whose backoff has passed (called regularly by the consumer loop and after each
    /// round of delivery reports).
    func retryBacklog() {
        let now = WallClock.monotonicNs()
        let due = state.withLock { state in
            state.lanes.compactMap { tp, lane in !lane.waiting.isEmpty && lane.probe == nil && !lane.draining && lane.retryAtNs <= now ? tp : nil }
        }
        for tp in due { drain(tp) }
    }

    /// Waits up to `timeoutMs` for every result to be acknowledged, then closes the producer. Once
    /// `cutShort` returns true (a fast stop), it waits at most `cutShortTimeoutMs` more. It waits the same
    /// in a cancelled task (where `Task.sleep` would return at once).
    /// - Returns: the number of results still not acknowledged.
    func close(timeoutMs: Int, cutShort: @Sendable () -> Bool = { false }, cutShortTimeoutMs: Int = 0) async -> Int {
        // Nothing is queued for the publishing thread from now on (later batches are published at once);
        // what is queued is published first, and counts as unacknowledged until then.
        queue.close()
        var deadline = ContinuousClock.now.advanced(by: .milliseconds(timeoutMs))
        var wasCut = false
        while unacknowledged > 0 && ContinuousClock.now < deadline {
            if !wasCut && cutShort() {
                wasCut = true
                deadline = min(deadline, ContinuousClock.now.advanced(by: .milliseconds(cutShortTimeoutMs)))
            }
            retryBacklog()
            await Self.pause(milliseconds: 5)
        }
        let left = unacknowledged
        await producer.producer?.close(timeoutMs: 1000)
        return left
    }

    /// Sleeps about `milliseconds` without holding a thread, in a cancelled task too.
    static func pause(milliseconds: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { continuation.resume() }
        }
    }

    /// Produces newly published records in order, or puts each behind the records waiting in its lane.
    /// Records of partitions this member no longer owns are dropped (logged at debug). A record librdkafka
    /// does not take is dealt with (``failed(_:)``), and the later records of its lane in the batch go back
    /// to the lane behind it, unproduced, so that a lane's records never overtake one another.
    func enqueue(_ batch: [Outgoing]) {
        guard let producer = producer.producer, !batch.isEmpty else { return }
        var dropped: [Outgoing] = []
        var toProduce: [(token: UInt64, outgoing: Outgoing)] = []
        toProduce.reserveCapacity(batch.count)
        // The partitions handed over in this batch, with their counts (few: one per input partition).
        var handed: [(TopicPartition, Int)] = []
        state.withLock { state in
            var lastSource: TopicPartition?
            var lastOwned = false
            for outgoing in batch {
                // Consecutive records of one partition (the usual batch) look their partition up once.
                if outgoing.source != lastSource {
                    lastSource = outgoing.source
                    lastOwned = state.owned.contains(outgoing.source)
                }
                // Released while it was being published: dropped (see ``release(_:)``).
                guard lastOwned else {
                    dropped.append(outgoing)
                    continue
                }
                if outgoing.hasCompanion && (outgoing.isDeadLetter || outgoing.isRetryTopicCopy) {
                    // `+=`: a record read again (after a rebalance) while its earlier copies are still in
                    // flight waits for all of them.
                    state.partsLeft[Position(partition: outgoing.source, offset: outgoing.offset), default: 0] += 2
                }
                if let lane = state.lanes[outgoing.source], !lane.isIdle {
                    state.lanes[outgoing.source]?.insert(outgoing)
                    continue
                }
                let token = state.nextToken
                state.nextToken += 1
                state.inFlight[token] = outgoing
                toProduce.append((token, outgoing))
                if let index = handed.lastIndex(where: { $0.0 == outgoing.source }) {
                    handed[index].1 += 1
                } else {
                    handed.append((outgoing.source, 1))
                }
            }
            for (tp, count) in handed { state.beginHanding(tp, count) }
        }
        for outgoing in dropped where !outgoing.isDeadLetter && !outgoing.isRetryTopicCopy {
            logger.debug("result dropped: its partition is no longer assigned to this member; its next owner reads the record again", metadata: [
                "partition": "\(outgoing.source)", "offset": String(outgoing.offset), "messageId": outgoing.result?.messageId ?? "",
            ])
        }
        guard !toProduce.isEmpty else { return }
        // Lanes a record of this batch was refused on: their later records here go back behind it.
        var stopped: Set<TopicPartition> = []
        var putBack: [(UInt64, Outgoing)] = []
        var toDrain: [TopicPartition] = []
        for (token, outgoing) in toProduce {
            if !stopped.isEmpty, stopped.contains(outgoing.source) {
                putBack.append((token, outgoing))
                continue
            }
            do throws(KafkaError) {
                try producer.produce(outgoing.record, token: token)
            } catch {
                _ = state.withLock { $0.inFlight.removeValue(forKey: token) }
                stopped.insert(outgoing.source)
                if !failed([(token, outgoing, error)]).isEmpty { toDrain.append(outgoing.source) }
            }
        }
        state.withLock { state in
            for (token, outgoing) in putBack {
                state.inFlight[token] = nil
                state.lanes[outgoing.source, default: Lane()].insert(outgoing)
            }
            for (tp, count) in handed {
                let left = state.handing[tp, default: 0] - count
                state.handing[tp] = left > 0 ? left : nil
            }
        }
        for tp in toDrain { drain(tp) }
    }

    /// Produces lane `tp`'s waiting records in order: all of them, or only the first (as a probe) while the
    /// lane is failing. Stops at the first record librdkafka does not take and deals with it.
    func drain(_ tp: TopicPartition) {
        guard let producer = producer.producer else { return }
        var owner = false
        while true {
            let now = WallClock.monotonicNs()
            let batch = state.withLock { state -> [(UInt64, Outgoing)] in
                guard var lane = state.lanes[tp], owner || !lane.draining else { return [] }
                // Released (see ``release(_:)``): nothing of it is produced any more.
                guard state.owned.contains(tp) else {
                    state.lanes[tp]?.draining = false
                    return []
                }
                guard lane.probe == nil, !lane.waiting.isEmpty, lane.retryAtNs <= now else {
                    state.lanes[tp]?.draining = false
                    return []
                }
                lane.draining = true
                owner = true
                let count = lane.failing ? 1 : lane.waiting.count
                var batch: [(UInt64, Outgoing)] = []
                batch.reserveCapacity(count)
                for var outgoing in lane.waiting.prefix(count) {
                    outgoing.isProbe = lane.failing
                    let token = state.nextToken
                    state.nextToken += 1
                    state.inFlight[token] = outgoing
                    batch.append((token, outgoing))
                }
                lane.waiting.removeFirst(count)
                if lane.failing { lane.probe = batch[0].0 }
                state.lanes[tp] = lane
                state.beginHanding(tp, batch.count)
                return batch
            }
            if batch.isEmpty { return }
            defer { endHanding(tp, batch.count) }
            var failure: (index: Int, error: KafkaError)?
            for (index, (token, outgoing)) in batch.enumerated() {
                do throws(KafkaError) {
                    try producer.produce(outgoing.record, token: token)
                } catch {
                    failure = (index, error)
                    break
                }
            }
            guard let (index, error) = failure else { continue }
            // Records after the refused one go back, unchanged and uncounted, before dealing with it.
            let (token, refused) = batch[index]
            state.withLock { state in
                state.inFlight[token] = nil
                let rest = batch[(index + 1)...]
                for (later, _) in rest { state.inFlight[later] = nil }
                state.lanes[tp, default: Lane()].insert(contentsOf: rest.map(\.1))
            }
            if failed([(token, refused, error)]).isEmpty {
                state.withLock { $0.lanes[tp]?.draining = false }
                return
            }
            // Replaced by a smaller record: produce it (and what follows) now.
        }
    }
}
