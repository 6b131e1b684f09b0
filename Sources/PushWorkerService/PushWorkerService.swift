import Foundation
import PushWorkerCore
import PushWorkerKafka
import Synchronization

/// The pushworker service: consumes pushes in a consumer group, validates and routes them, runs workers
/// under their budgets, produces results, and stores each input offset only once its result (and every
/// earlier one of its partition) is acknowledged by the broker (contract sections 1–4).
///
/// ``run()`` returns after ``shutdown()``: it stops taking records, lets running jobs finish or reach their
/// deadline, delivers their results, commits, and leaves the group. Records taken but not yet started are
/// not run; their offsets are not committed, so the group reads them again.
public final class PushWorkerService: Sendable {
    private let configuration: ServiceConfiguration
    private let registry: WorkerRegistry
    private let logger: Logger
    private let onResult: (@Sendable (KafkaOutgoingRecord) -> Void)?
    private let stopRequested = Atomic<Bool>(false)
    private let consumerBox = Mutex<KafkaConsumer?>(nil)
    private let publisherBox = Mutex<ResultPublisher?>(nil)
    private let statistics = Mutex(Statistics())

    /// Counters of a running service.
    public struct Statistics: Sendable {
        /// Records taken from the input topics.
        public var recordsConsumed = 0
        /// Results acknowledged by the broker.
        public var resultsDelivered = 0
        /// Results produced again because librdkafka reported them undelivered (never dropped).
        public var resultDeliveryRetries = 0
        /// Rebalances seen (assignments, revocations and losses).
        public var rebalances = 0
        /// Whether the consumer has partitions assigned.
        public var assignedPartitions: [TopicPartition] = []
    }

    /// Creates a service.
    /// - Parameters:
    ///   - configuration: the Kafka settings, topics, bounds and configured workers.
    ///   - registry: the workers by `type`; `nil` for the configured ones (``ServiceConfiguration/makeRegistry()``).
    ///   - logger: the service's logger.
    ///   - onResult: told of each result record once the broker has acknowledged it (used by `dev`).
    public init(
        configuration: ServiceConfiguration,
        registry: WorkerRegistry? = nil,
        logger: Logger = Logger(label: "pushworker"),
        onResult: (@Sendable (KafkaOutgoingRecord) -> Void)? = nil
    ) {
        self.configuration = configuration
        self.registry = registry ?? configuration.makeRegistry()
        self.logger = logger
        self.onResult = onResult
    }

    /// A snapshot of the counters.
    public var currentStatistics: Statistics {
        var snapshot = statistics.withLock { $0 }
        snapshot.resultDeliveryRetries = publisherBox.withLock { $0 }?.retryCount ?? snapshot.resultDeliveryRetries
        return snapshot
    }

    /// Asks ``run()`` to stop gracefully. Safe to call from any thread, any number of times.
    public func shutdown() {
        guard !stopRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        logger.info("shutdown requested: no new records are taken; running jobs finish or reach their deadline")
        consumerBox.withLock { $0 }?.wakeUp()
    }

    /// Runs the service until ``shutdown()``; all blocking Kafka calls run on dedicated threads.
    /// - Throws: ``KafkaError`` if the clients cannot be created or a fatal client error happens.
    public func run() async throws {
        let tracker = OffsetTracker()
        let executor = BudgetedExecutor(logger: Logger(label: "pushworker.executor"))
        let kafkaLog = Logger(label: "pushworker.librdkafka").kafkaLogHandler
        let drainTimeoutMs = configuration.effectiveDrainTimeoutMs
        let rebalance = RebalanceRelay()
        let consumer = try KafkaConsumer(configuration: configuration.consumerProperties, logHandler: kafkaLog) { event in
            rebalance.handler?(event)
        }
        let storeLogger = logger
        let publisher = try ResultPublisher(
            properties: configuration.producerProperties, resultsTopic: configuration.resultsTopic, tracker: tracker,
            logger: logger, logHandler: kafkaLog,
            storeOffsets: { offsets in
                for (tp, error) in consumer.storeOffsets(offsets) {
                    storeLogger.debug("offset not stored (partition no longer assigned)", metadata: ["partition": "\(tp)", "error": error.message])
                }
            },
            onDelivered: { [self] record in
                self.statistics.withLock { $0.resultsDelivered += 1 }
                onResult?(record)
            })
        let dispatcher = JobDispatcher(
            registry: registry, validator: PayloadValidator(maxPayloadBytes: configuration.maxPayloadBytes),
            maxInFlight: configuration.maxInFlight, executor: executor) { result in
                publisher.publish(result)
            }
        let loop = ConsumerLoop(
            consumer: consumer, dispatcher: dispatcher, publisher: publisher, tracker: tracker,
            maxBuffered: configuration.maxBufferedRecords, drainTimeoutMs: drainTimeoutMs, logger: logger,
            statistics: { [self] change in self.statistics.withLock { change(&$0) } })
        rebalance.handler = { event in loop.rebalanced(event) }
        consumerBox.withLock { $0 = consumer }
        publisherBox.withLock { $0 = publisher }
        do {
            try consumer.subscribe(configuration.inputTopics)
        } catch {
            _ = await publisher.close(timeoutMs: 0)
            consumerBox.withLock { $0 = nil }
            publisherBox.withLock { $0 = nil }
            throw error
        }
        logger.info("consuming", metadata: [
            "topics": configuration.inputTopics.joined(separator: ","), "groupId": configuration.groupId,
            "resultsTopic": configuration.resultsTopic, "bootstrap.servers": configuration.bootstrapServers,
            "workers": registry.types.joined(separator: ","), "maxInFlight": String(configuration.maxInFlight),
        ])
        if stopRequested.load(ordering: .acquiring) { consumer.wakeUp() }
        let failure: Error?
        do {
            try await DedicatedThread.run(name: "pushworker-consumer") { [self] in
                try loop.run(until: { self.stopRequested.load(ordering: .acquiring) })
            }
            failure = nil
        } catch {
            logger.error("consumer failed; stopping", metadata: ["error": "\(error)"])
            failure = error
        }
        // The loop has let running jobs finish or reach their deadline; now deliver their results.
        let left = await publisher.close(timeoutMs: drainTimeoutMs)
        if left > 0 { logger.warning("results not acknowledged at shutdown; their records will be read again", metadata: ["count": String(left)]) }
        do {
            try await DedicatedThread.run(name: "pushworker-close") {
                loop.storeCommittable()
                do { try consumer.commit() } catch { storeLogger.warning("final commit failed", metadata: ["error": "\(error)"]) }
                try consumer.close()
            }
        } catch {
            logger.warning("leaving the group failed", metadata: ["error": "\(error)"])
        }
        consumerBox.withLock { $0 = nil }
        let retries = publisher.retryCount
        statistics.withLock { $0.resultDeliveryRetries = retries }
        publisherBox.withLock { $0 = nil }
        rebalance.handler = nil
        logger.info("stopped", metadata: ["resultsDelivered": String(currentStatistics.resultsDelivered)])
        if let failure { throw failure }
    }
}

/// Lets the consumer's rebalance callback reach the loop created after the consumer.
///
/// `@unchecked Sendable`: `handler` is set before `subscribe` (so before any rebalance can happen) and
/// cleared after the consumer is closed (after the last rebalance).
final class RebalanceRelay: @unchecked Sendable {
    var handler: (@Sendable (KafkaRebalanceEvent) -> Void)?
}
