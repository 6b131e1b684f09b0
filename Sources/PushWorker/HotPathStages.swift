import Foundation
import PushWorkerCore
import PushWorkerKafka
import Synchronization

/// Measures the service's per-record path stage by stage, for `pushworker bench`: each stage runs alone,
/// over the same records, with the components ``PushWorkerService`` builds from the same configuration, so
/// that the service's own path carries no timer.
///
/// Each figure is the CPU time (`CLOCK_THREAD_CPUTIME_ID`) of the thread that runs the stage, divided by
/// the number of records: waits (for the broker, for a lock held elsewhere) and other load on the machine
/// count for little, and work librdkafka does on its own threads (fetching, building and sending
/// requests) is in no stage. The stages, in the order of the path:
/// 1. poll + copy-out: ``KafkaConsumer/poll(timeoutMs:)`` of every record (its copy into a
///    ``KafkaRecord``) and the ``InputRecord`` the consumer loop makes of it, on a consumer with the
///    service's consumer properties, assigned the topic's partitions from their beginning;
/// 2. validate: ``PushHeaders`` and ``PayloadValidator`` over the records (what
///    ``JobDispatcher/submit(_:)`` checks before routing);
/// 3. route + dispatch: ``JobDispatcher/submit(_:)`` in the consumer loop's batches, with the registry's
///    workers (the bench's noop answers at once, on the submitting thread) and the service's handling of
///    each batch of outputs short of publishing it (the ``Publication``s), less stage 2 (which `submit`
///    includes);
/// 4. encode result: ``ResultRecord/jsonBytes()`` of every result;
/// 5. produce: ``ResultPublisher``'s `publish` of every batch the dispatcher handed over (lanes,
///    bookkeeping, `rd_kafka_produceva`), less stage 4 (which `publish` includes);
/// 6. delivery report + offset store: the producer's poll thread from the first delivery report to the
///    last (librdkafka's `dr_msg_cb`, the report batches, ``OffsetTracker`` marking the records done,
///    `rd_kafka_offsets_store`), plus tracking the records' offsets as the consumer loop does when it
///    takes them.
///
/// Stages 2 to 4 work in memory and run ``repetitions`` times; the fastest run counts. Stages 1, 5 and 6
/// run once (they consume and produce the records).
package enum HotPathStages {
    /// One measured stage.
    package struct Stage: Sendable, Equatable {
        /// The stage's name, e.g. `validate`.
        package var name: String
        /// CPU time per record, in nanoseconds.
        package var nanosecondsPerRecord: Double

        /// Creates a stage figure.
        package init(name: String, nanosecondsPerRecord: Double) {
            self.name = name
            self.nanosecondsPerRecord = nanosecondsPerRecord
        }
    }

    /// How many times the in-memory stages (validate, route + dispatch, encode) run: 3.
    package static let repetitions = 3

    /// How long a stage waits for records or acknowledgements that do not come: 60 s.
    static let patience: Duration = .seconds(60)

    /// Measures the stages over the first `records` records of `topic` (every partition, from the
    /// beginning), with `configuration`'s consumer and producer properties, results topic, validation
    /// limit, dispatch settings and `registry`'s workers. Results go to `configuration.resultsTopic`;
    /// the consumer stores the offsets it would commit (in `configuration.groupId`).
    /// - Returns: the six stages, in the order of the path.
    /// - Throws: ``KafkaError`` when a client cannot be created or the topic's partitions cannot be read;
    ///   ``HotPathStagesError`` when the records, the results or their acknowledgements do not all arrive
    ///   within 60 s, when a record gets anything but its result, or when acknowledged records are not
    ///   marked done; ``MetricsError`` (a programming error caught by tests).
    package static func measure(configuration: ServiceConfiguration, registry: WorkerRegistry, topic: String, records: Int) async throws -> [Stage] {
        let release = ConsumerRelease()
        let outcome: Result<[Stage], any Error>
        do {
            outcome = .success(try await measure(configuration: configuration, registry: registry, topic: topic, records: records, release: release))
        } catch {
            outcome = .failure(error)
        }
        // As the service does: the consumer's last reference drops on a dedicated thread (rd_kafka_destroy
        // joins librdkafka's threads), once the frame above holding it is gone.
        await release.releaseOnDedicatedThread()
        return try outcome.get()
    }

    private static func measure(configuration: ServiceConfiguration, registry: WorkerRegistry, topic: String, records: Int, release: ConsumerRelease) async throws -> [Stage] {
        let logger = PushWorkerLogger(label: "pushworker.bench")
        let kafkaLog = PushWorkerLogger(label: "pushworker.librdkafka").kafkaLogHandler
        let metrics = try ServiceMetrics(registeredTypes: registry.types, outputTopics: configuration.outputTopics)
        let consumerProperties = configuration.consumerProperties
        let (consumer, partitions) = try await DedicatedThread.run(name: "pushworker-bench-consumer") {
            let consumer = try KafkaConsumer(configuration: consumerProperties, logHandler: kafkaLog, onStatistics: { statistics in
                metrics.statistics(statistics, client: .consumer)
            })
            let partitions = try consumer.partitions(of: topic, timeoutMs: 10_000)
            // Assigned rather than subscribed: no group join to wait for; a record costs the same to poll.
            try consumer.assign(partitions.map { TopicPartitionOffset($0, offset: KafkaConsumer.offsetBeginning) })
            return (consumer, partitions)
        }
        release.hold(consumer)
        let polled = try await DedicatedThread.run(name: "pushworker-bench-poll") {
            try poll(consumer, records: records)
        }
        let inputs = polled.inputs
        let validator = PayloadValidator(maxPayloadBytes: configuration.maxPayloadBytes)
        let inMemory = try await DedicatedThread.run(name: "pushworker-bench-in-memory") {
            try inMemoryStages(inputs, configuration: configuration, registry: registry, validator: validator, metrics: metrics, logger: logger)
        }
        let tracker = OffsetTracker()
        let watch = DeliveryWatch()
        let publisher = try ResultPublisher(
            properties: configuration.producerProperties, resultsTopic: configuration.resultsTopic, tracker: tracker,
            logger: logger, logHandler: kafkaLog, metrics: metrics,
            // As the service's: the consumer stores the offsets whose results are acknowledged.
            storeOffsets: { [weak consumer] offsets in
                guard let consumer else { return }
                for (tp, error) in consumer.storeOffsets(offsets) {
                    logger.debug("offset not stored (partition no longer assigned)", metadata: ["partition": "\(tp)", "error": error.message])
                }
            },
            onDelivered: { _ in watch.delivered() },
            onRetried: { _ in })
        let produced: Result<(publishNs: Int64, deliveryNs: Int64, trackNs: Int64), any Error>
        do {
            produced = .success(try await DedicatedThread.run(name: "pushworker-bench-produce") {
                try produce(inMemory.batches, results: inMemory.results, taken: polled.taken, partitions: partitions, topic: topic,
                            publisher: publisher, tracker: tracker, watch: watch)
            })
        } catch {
            produced = .failure(error)
        }
        _ = await publisher.close(timeoutMs: 10_000)
        _ = try? await DedicatedThread.run(name: "pushworker-bench-close") { try consumer.close() }
        let (publishNs, deliveryNs, trackNs) = try produced.get()
        let count = Double(records)
        return [
            Stage(name: "poll + copy-out", nanosecondsPerRecord: Double(polled.cpuNs) / count),
            Stage(name: "validate", nanosecondsPerRecord: Double(inMemory.validateNs) / count),
            // A difference of two measurements: with few records (or under a sanitizer, which slows the two
            // loops unevenly) it can come out below zero; a stage takes no less than no time.
            Stage(name: "route + dispatch", nanosecondsPerRecord: Double(max(0, inMemory.dispatchNs - inMemory.validateNs)) / count),
            Stage(name: "encode result", nanosecondsPerRecord: Double(inMemory.encodeNs) / count),
            Stage(name: "produce", nanosecondsPerRecord: Double(max(0, publishNs - inMemory.encodeNs)) / count),
            Stage(name: "delivery report + offset store", nanosecondsPerRecord: Double(deliveryNs + trackNs) / count),
        ]
    }

    /// What stage 1 took: the records as the core sees them, their positions, and its CPU time.
    private struct Polled: Sendable {
        var inputs: [InputRecord]
        var taken: [(TopicPartition, Int64)]
        var cpuNs: Int64
    }

    /// Stage 1: polls `records` records as the consumer loop does (a 100 ms wait when none is ready, then
    /// no wait while records come) and makes an ``InputRecord`` of each. Blocking: dedicated thread.
    private static func poll(_ consumer: KafkaConsumer, records: Int) throws -> Polled {
        var inputs: [InputRecord] = []
        var taken: [(TopicPartition, Int64)] = []
        inputs.reserveCapacity(records)
        taken.reserveCapacity(records)
        var timeout: Int32 = 100
        // Checked only when a poll returns nothing, so that the loop over records reads no clock.
        var progress = (count: 0, at: ContinuousClock.now)
        let start = threadCPUNs()
        while inputs.count < records {
            guard let record = try consumer.poll(timeoutMs: timeout) else {
                timeout = 100
                if inputs.count > progress.count {
                    progress = (inputs.count, .now)
                } else if progress.at.duration(to: .now) > patience {
                    throw HotPathStagesError(.timedOut, "only \(inputs.count) of \(records) records arrived")
                }
                continue
            }
            timeout = 0
            taken.append((record.topicPartition, record.offset))
            inputs.append(InputRecord(consumed: record, receivedAtMs: WallClock.nowMs()))
        }
        return Polled(inputs: inputs, taken: taken, cpuNs: threadCPUNs() - start)
    }

    /// What stages 2 to 4 took (the fastest of ``repetitions`` runs each), the batches of outputs the
    /// dispatcher handed over (for the publisher), and the results in them.
    private struct InMemory: Sendable {
        var validateNs: Int64
        var dispatchNs: Int64
        var encodeNs: Int64
        var batches: [[Publication]]
        var results: [ResultRecord]
    }

    /// Stages 2 to 4, each ``repetitions`` times. Runs on the calling (dedicated) thread.
    private static func inMemoryStages(
        _ inputs: [InputRecord], configuration: ServiceConfiguration, registry: WorkerRegistry, validator: PayloadValidator,
        metrics: ServiceMetrics, logger: PushWorkerLogger
    ) throws -> InMemory {
        var validateNs = Int64.max
        for _ in 0..<repetitions {
            let nowMs = WallClock.nowMs()
            var accepted = 0
            let start = threadCPUNs()
            for input in inputs {
                let headers = PushHeaders(input.headers)
                if case .accepted = validator.validate(value: input.value, apnsExpirationHeader: headers.apnsExpiration, nowMs: nowMs) { accepted += 1 }
            }
            validateNs = min(validateNs, threadCPUNs() - start)
            withExtendedLifetime(accepted) {}
        }
        // The consumer loop's batches, made before the clock starts (the loop fills them as it polls).
        let batchSize = ConsumerLoop.batchSize
        let batches = stride(from: 0, to: inputs.count, by: batchSize).map { Array(inputs[$0..<min($0 + batchSize, inputs.count)]) }
        var dispatchNs = Int64.max
        var published: [[Publication]] = []
        for _ in 0..<repetitions {
            let collector = OutputCollector(capacity: batches.count)
            let executor = BudgetedExecutor(logger: PushWorkerLogger(label: "pushworker.executor"), observer: { event in metrics.budgetEvent(event) })
            // As the service builds it. Each batch of outputs is handled as the service's handler handles a
            // result without a retry or a dead letter (the bench has neither), short of publishing it.
            let dispatcher = JobDispatcher(
                registry: registry, validator: validator, maxInFlight: configuration.maxInFlight, executor: executor,
                collapse: configuration.collapse, dedupe: configuration.dedupe, delay: configuration.retries.delaySettings,
                onOutputs: { outputs in
                    var batch: [Publication] = []
                    batch.reserveCapacity(outputs.count)
                    var unexpected = 0
                    for output in outputs {
                        switch output {
                        case .result(let result, _, nil):
                            if result.worker != nil { metrics.workerRan(type: result.type, durationMs: result.durationMs) }
                            logger.debug("result", metadata: PushWorkerService.metadata(of: result))
                            batch.append(.result(result, deadLetter: nil, retry: nil))
                        case .result, .forward:
                            unexpected += 1
                        }
                    }
                    collector.add(batch, unexpected: unexpected)
                })
            let start = threadCPUNs()
            for batch in batches { dispatcher.submit(batch) }
            dispatchNs = min(dispatchNs, threadCPUNs() - start)
            // A worker that does not answer at once finishes on the executor's threads (not counted).
            published = try collector.wait(for: inputs.count)
        }
        let results = published.flatMap { batch in
            batch.compactMap { publication -> ResultRecord? in
                if case .result(let result, _, _) = publication { return result }
                return nil
            }
        }
        var encodeNs = Int64.max
        for _ in 0..<repetitions {
            var bytes = 0
            let start = threadCPUNs()
            for result in results { bytes &+= result.jsonBytes().count }
            encodeNs = min(encodeNs, threadCPUNs() - start)
            withExtendedLifetime(bytes) {}
        }
        return InMemory(validateNs: validateNs, dispatchNs: dispatchNs, encodeNs: encodeNs, batches: published, results: results)
    }

    /// Stages 5 and 6: tracks the records' offsets, publishes one warm-up result (so that the results
    /// topic's metadata is known and the poll thread's clock is read at a first report), then every batch
    /// as the dispatcher handed it over, and waits until every result is acknowledged and every record is
    /// done in `tracker`. Blocking: dedicated thread.
    private static func produce(
        _ batches: [[Publication]], results: [ResultRecord], taken: [(TopicPartition, Int64)], partitions: [TopicPartition], topic: String,
        publisher: ResultPublisher, tracker: OffsetTracker, watch: DeliveryWatch
    ) throws -> (publishNs: Int64, deliveryNs: Int64, trackNs: Int64) {
        let batchSize = ConsumerLoop.batchSize
        let trackStart = threadCPUNs()
        for start in stride(from: 0, to: taken.count, by: batchSize) {
            tracker.track(Array(taken[start..<min(start + batchSize, taken.count)]))
        }
        let trackNs = threadCPUNs() - trackStart
        // The warm-up result answers a record of a partition no stage reads, never tracked.
        let warmUpSource = RecordSource(topic: "\(topic).warm-up", partition: 0, offset: 0)
        publisher.own(partitions + [TopicPartition(topic: warmUpSource.topic, partition: warmUpSource.partition)])
        guard var warmUp = results.first else { return (0, 0, trackNs) }
        warmUp.source = warmUpSource
        watch.expect(1)
        publisher.publish(warmUp)
        try watch.wait(what: "the warm-up result's acknowledgement")
        watch.expect(results.count + 1)
        let start = threadCPUNs()
        for batch in batches { publisher.publish(batch) }
        let publishNs = threadCPUNs() - start
        let deliveryNs = try watch.wait(what: "acknowledgements of the \(results.count) results")
        if tracker.outstanding > 0 {
            throw HotPathStagesError(.notDone, "\(tracker.outstanding) of \(results.count) records were not marked done after their results were acknowledged")
        }
        return (publishNs, deliveryNs, trackNs)
    }

    /// The calling thread's CPU time, in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
    static func threadCPUNs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// The batches of outputs of one dispatch run, from whatever thread the dispatcher hands them over on.
    private final class OutputCollector: Sendable {
        private let state: Mutex<(batches: [[Publication]], count: Int, unexpected: Int)>

        init(capacity: Int) {
            var batches: [[Publication]] = []
            batches.reserveCapacity(capacity)
            state = Mutex((batches, 0, 0))
        }

        /// Keeps a batch, and counts the outputs the bench does not expect (a retry, a record sent to the
        /// retry topic).
        func add(_ batch: [Publication], unexpected: Int) {
            state.withLock { state in
                state.batches.append(batch)
                state.count += batch.count + unexpected
                state.unexpected += unexpected
            }
        }

        /// Waits until `count` outputs have come and returns the batches.
        /// - Throws: ``HotPathStagesError/Code/timedOut`` after ``HotPathStages/patience``,
        ///   ``HotPathStagesError/Code/unexpectedOutput`` when a record got a retry or went to the retry
        ///   topic instead of getting its result.
        func wait(for count: Int) throws -> [[Publication]] {
            let deadline = ContinuousClock.now.advanced(by: patience)
            while true {
                let (batches, seen, unexpected) = state.withLock { ($0.batches, $0.count, $0.unexpected) }
                if unexpected > 0 { throw HotPathStagesError(.unexpectedOutput, "\(unexpected) records got a retry or went to the retry topic instead of getting their result") }
                if seen >= count { return batches }
                if ContinuousClock.now > deadline { throw HotPathStagesError(.timedOut, "only \(seen) of \(count) records got a result") }
                Thread.sleep(forTimeInterval: 0.001)
            }
        }
    }

    /// Counts acknowledged results on the producer's poll thread, as the service's `onDelivered` counts
    /// them (one lock each), and reads that thread's CPU time at the first one and at the last one expected.
    private final class DeliveryWatch: Sendable {
        private struct State {
            var count = 0
            var expected = Int.max
            var firstCPUNs: Int64?
            var lastCPUNs: Int64?
        }

        private let state = Mutex(State())

        /// Called by the publisher for each acknowledged result, on the producer's poll thread.
        func delivered() {
            state.withLock { state in
                state.count += 1
                if state.count == 1 { state.firstCPUNs = threadCPUNs() }
                if state.count == state.expected { state.lastCPUNs = threadCPUNs() }
            }
        }

        /// Sets the count of acknowledgements (the first one included) to wait for; call it before the
        /// results that make it up are published.
        func expect(_ count: Int) {
            state.withLock { state in
                state.expected = count
                state.lastCPUNs = nil
            }
        }

        /// Waits until the expected count is acknowledged.
        /// - Returns: the poll thread's CPU time from the first acknowledgement to the expected one.
        /// - Throws: ``HotPathStagesError/Code/timedOut`` after ``HotPathStages/patience``.
        @discardableResult
        func wait(what: String) throws -> Int64 {
            let deadline = ContinuousClock.now.advanced(by: patience)
            while true {
                let (seen, expected, first, last) = state.withLock { ($0.count, $0.expected, $0.firstCPUNs, $0.lastCPUNs) }
                if let first, let last { return last - first }
                if ContinuousClock.now > deadline { throw HotPathStagesError(.timedOut, "\(what): only \(seen) of \(expected) arrived") }
                Thread.sleep(forTimeInterval: 0.001)
            }
        }
    }
}
