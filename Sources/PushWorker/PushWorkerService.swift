import Foundation
import PushWorkerCore
import PushWorkerEndpoints
import PushWorkerKafka
import PushWorkerMetrics
import Synchronization

/// The pushworker service: consumes pushes in a consumer group, validates and routes them, runs workers
/// under their budgets, produces results, and stores each input offset only once its result (and every
/// earlier one of its partition) is acknowledged by the broker (contract sections 1–4).
///
/// It stops in one of two ways (docs/embedding.md describes both):
/// - gracefully, after ``shutdown()``: it stops taking records, lets running jobs finish or reach their
///   deadline, delivers their results, commits, and leaves the group. Records taken but not yet started are
///   not run; their offsets are not committed, so the group reads them again.
/// - fast, when the task running ``run()`` is cancelled: running jobs are cut short and get no result; see
///   ``run()``.
///
/// While ``run()`` runs, and when ``ServiceConfiguration/httpServer`` is enabled, an HTTP server serves
/// `/metrics` (Prometheus text format), `/healthz` (liveness) and `/readyz` (readiness); see
/// docs/metrics.md. With ``ServiceConfiguration/statusPage`` enabled (the default) it also serves the
/// status page `/` and `/status.json`, and the service publishes its snapshot to the status topic and
/// reads the group's (docs/operations.md, "Status page").
public final class PushWorkerService: Sendable {
    private let configuration: ServiceConfiguration
    private let registry: WorkerRegistry
    private let logger: PushWorkerLogger
    private let onResult: (@Sendable (KafkaOutgoingRecord) -> Void)?
    private let stallThreshold: Duration
    private let stopRequested = Atomic<Bool>(false)
    /// Set when the task running ``run()`` is cancelled: the fast stop.
    private let stopNowRequested = Atomic<Bool>(false)
    private let consumerBox = Mutex<KafkaGroupMembers?>(nil)
    private let serverBox = Mutex<EndpointServer?>(nil)
    private let statistics = Mutex(Statistics())

    /// Counters of a running service.
    public struct Statistics: Sendable {
        /// Records taken from the input topics.
        public var recordsConsumed = 0
        /// Results acknowledged by the broker.
        public var resultsDelivered = 0
        /// Results produced again because librdkafka reported them undelivered (never dropped).
        public var resultDeliveryRetries = 0
        /// Results and dead letters that could never be produced as they were and were replaced by a smaller
        /// record (docs/guarantees.md).
        public var recordsReplaced = 0
        /// Rebalances seen (assignments, revocations and losses).
        public var rebalances = 0
        /// Jobs of revoked partitions still running at the rebalance drain timeout
        /// (``ServiceConfiguration/effectiveRebalanceDrainTimeout(for:)``), and jobs of lost partitions,
        /// cut short without a result: their records are read again by the partitions' next owner.
        public var jobsCutShortByRebalance = 0
        /// Revocations whose commit of the revoked partitions' acknowledged offsets failed (e.g. a coordinator
        /// still rebalancing refused it with `REBALANCE_IN_PROGRESS`); librdkafka tries again after the
        /// unassign, and records whose commit is refused run again on the partitions' next owner.
        public var revocationCommitFailures = 0
        /// Assigned partitions paused because their results (or dead letters) cannot be delivered now; each
        /// is resumed once they go through again.
        public var heldPartitions: [TopicPartition] = []
        /// Exactly-once mode (``ServiceConfiguration/exactlyOnce``): transactions committed.
        public var transactionsCommitted = 0
        /// Exactly-once mode: transactions aborted (their input records are read and run again).
        public var transactionsAborted = 0
        /// Exactly-once mode: transactional calls made again after a retriable error (e.g. `_TIMED_OUT`).
        public var transactionRetries = 0
        /// Exactly-once mode: rewinds of the assigned partitions after an aborted transaction.
        public var transactionRewinds = 0
        /// Whether the consumer has partitions assigned.
        public var assignedPartitions: [TopicPartition] = []
    }

    /// Creates a service.
    /// - Parameters:
    ///   - configuration: the Kafka settings, topics, bounds and configured workers.
    ///   - registry: the workers by `type`; `nil` for the configured ones (``ServiceConfiguration/makeRegistry()``).
    ///   - logger: the service's logger.
    ///   - onResult: told of each result record once the broker has acknowledged it (used by `dev`), on the
    ///     results producer's poll thread: keep it short (a blocked thread fails `/healthz`).
    public convenience init(
        configuration: ServiceConfiguration,
        registry: WorkerRegistry? = nil,
        logger: PushWorkerLogger = PushWorkerLogger(label: "pushworker"),
        onResult: (@Sendable (KafkaOutgoingRecord) -> Void)? = nil
    ) {
        self.init(configuration: configuration, registry: registry, logger: logger, onResult: onResult, stallThreshold: ServiceHealth.stallThreshold)
    }

    /// Creates a service whose liveness fails after `stallThreshold` without a round of one of its threads
    /// (tests use a short one).
    init(
        configuration: ServiceConfiguration, registry: WorkerRegistry?, logger: PushWorkerLogger,
        onResult: (@Sendable (KafkaOutgoingRecord) -> Void)?, stallThreshold: Duration
    ) {
        self.configuration = configuration
        self.registry = registry ?? configuration.makeRegistry()
        self.logger = logger
        self.onResult = onResult
        self.stallThreshold = stallThreshold
    }

    /// A snapshot of the counters.
    public var currentStatistics: Statistics { statistics.withLock { $0 } }

    /// How long a fast stop (cancelling the task running ``run()``) waits for results already produced to
    /// be acknowledged by the broker before it commits and leaves the group: 2 seconds (or the drain
    /// timeout, ``ServiceConfiguration/drainTimeout``, if shorter). Results not acknowledged by then are
    /// not lost: their offsets are not committed, so their records are read again.
    public static let fastStopDeliveryTimeout: Duration = .seconds(2)

    /// librdkafka's default `session.timeout.ms` (45000), which the warning names when none is configured.
    static let librdkafkaSessionTimeoutMs = 45_000

    /// librdkafka's default `max.poll.interval.ms` (300000), which the warning names when none is configured.
    static let librdkafkaMaxPollIntervalMs = 300_000

    /// Asks ``run()`` to stop gracefully. Safe to call from any thread, any number of times. Cancelling the
    /// task running ``run()`` afterwards (during the drain) turns the graceful stop into the fast one.
    public func shutdown() {
        guard !stopRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        logger.info("shutdown requested: no new records are taken; running jobs finish or reach their deadline")
        consumerBox.withLock { $0 }?.wakeUp()
    }

    /// The address of the running HTTP server (`host:port`, the bound port when 0 was configured), or `nil`
    /// when it is disabled or the service is not running.
    public var httpServerAddress: String? { serverBox.withLock { $0 }?.address.description }

    /// The port of the running HTTP server, or `nil` when it is disabled or the service is not running.
    public var httpServerPort: UInt16? { serverBox.withLock { $0 }?.port }

    /// Runs the service until ``shutdown()`` (a graceful stop) or until the task running it is cancelled (a
    /// fast stop); all blocking Kafka calls run on dedicated threads, never on the cooperative pool.
    ///
    /// The HTTP server (when enabled) starts first and stops when the service has left the group.
    ///
    /// **Cancellation** (the fast stop), at any time, also during the drain of a graceful stop (which it cuts
    /// short) and before the clients exist:
    /// 1. no record is taken any more; records taken but not started are not run;
    /// 2. every running job's task is cancelled at once, and no result is reported for it (it neither
    ///    finished nor ran out of its budget, so `failed`/`timeout` would be false). A job that had already
    ///    finished, or passed its deadline, keeps its result;
    /// 3. results already produced are delivered, waiting at most ``fastStopDeliveryTimeout``;
    /// 4. the offsets whose results are acknowledged are committed, and the service leaves the group; the HTTP
    ///    server stops;
    /// 5. ``run()`` returns normally (it does not throw `CancellationError`).
    ///
    /// The records of jobs cut short, not started, or whose results were not acknowledged in time keep their
    /// offsets uncommitted: the group reads them again (at-least-once), whoever owns their partitions next.
    /// Their workers may therefore run twice for those records. A worker that ignores cancellation goes on
    /// in the background, unobserved. When cancelled before it began, ``run()`` returns at once without
    /// connecting.
    ///
    /// Only the service's own tasks are cancelled: a graceful stop (``shutdown()``) never cancels a job
    /// before its deadline.
    /// - Throws: ``ConfigurationError`` before anything starts when the registry does not match the
    ///   configuration (``ServiceConfiguration/checkRoutes(_:)``: a worker for a type not in `permittedTypes`,
    ///   a permitted type without a worker, a `workerSettings` section no registered worker read), as
    ///   `pushworker run` refuses to start; ``EndpointServerError`` if the HTTP server cannot listen (e.g. its
    ///   port is in use; the message names the port and the settings to change), ``KafkaError`` if the
    ///   clients cannot be created or a fatal client error happens.
    public func run() async throws {
        try await withTaskCancellationHandler {
            try await runUntilStopped()
        } onCancel: {
            stopNow()
        }
    }

    /// The fast stop (the task running ``run()`` was cancelled). Safe from any thread, any number of times.
    private func stopNow() {
        guard !stopNowRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        stopRequested.store(true, ordering: .releasing)
        logger.info("stopping now (the task running the service was cancelled): running jobs are cancelled without a result; their records will be read again")
        consumerBox.withLock { $0 }?.wakeUp()
    }

    private func runUntilStopped() async throws {
        // What `pushworker run` checks before it builds the service, checked here too for programs that
        // build it themselves: a wrong route or an unread settings section is refused, never found later.
        try configuration.checkRoutes(registry)
        if stopNowRequested.load(ordering: .acquiring) { return }
        // Built once per run; it always sets auto.offset.reset (the user's value, else pushworker's earliest).
        let consumerProperties = configuration.consumerProperties
        let metrics = try ServiceMetrics(
            registeredTypes: registry.types,
            startsAtEarliest: ["earliest", "smallest", "beginning"].contains(consumerProperties["auto.offset.reset"]),
            outputTopics: configuration.outputTopics, inputTopics: configuration.inputTopics)
        let health = HealthRelay()
        let board = configuration.statusPage.enabled
            ? StatusBoard(settings: configuration.statusPage, groupId: configuration.groupId, inputTopics: configuration.inputTopics,
                          subscribedTopics: configuration.subscribedTopics)
            : nil
        if configuration.httpServer.enabled {
            let server = try startHTTPServer(metrics: metrics, health: health, board: board)
            serverBox.withLock { $0 = server }
        }
        do {
            try await runPipeline(consumerProperties: consumerProperties, metrics: metrics, health: health, board: board)
        } catch {
            await stopHTTPServer()
            throw error
        }
        await stopHTTPServer()
    }

    private func startHTTPServer(metrics: ServiceMetrics, health: HealthRelay, board: StatusBoard?) throws -> EndpointServer {
        let settings = configuration.httpServer
        let httpLogger = PushWorkerLogger(label: "pushworker.http")
        let workerMetrics = registry.metrics
        var statusRoutes: [String: EndpointHandler] = [:]
        if let board {
            let assets = StatusPageAssets(directory: configuration.statusPage.dygraphsPath)
            board.plotsAvailable.store(assets.available, ordering: .relaxed)
            if !assets.available {
                logger.warning("the status page's plotting library is missing: the page shows tables instead of plots", metadata: [
                    "statusPage.dygraphsPath": configuration.statusPage.dygraphsPath, "install": "apt-get install libjs-dygraphs",
                ])
            }
            statusRoutes = assets.routes { [weak metrics] in board.document(assignment: metrics?.assigned ?? []) }
        }
        let server: EndpointServer
        do {
            server = try EndpointServer(host: settings.host, port: settings.port, routes: statusRoutes.merging([
                "/metrics": { _ in
                    EndpointResponse(status: 200, contentType: MetricsRegistry.contentType, body: Array(metrics.exposition(including: workerMetrics).utf8))
                },
                "/healthz": { _ in health.current?.liveness() ?? EndpointResponse(status: 200, text: "ok\n") },
                "/readyz": { _ in
                    health.current?.readiness() ?? ServiceHealth.readinessResponse(broker: false, group: false, assigned: false, serving: true)
                },
            ]) { status, _ in status }, logHandler: { message in httpLogger.warning("libmicrohttpd: \(message)") })
        } catch let error where error.code == .addressInUse {
            throw EndpointServerError(.addressInUse, host: error.host, port: error.port,
                "cannot start the HTTP server: port \(error.port) on \(error.host) is already in use; choose another port with httpServer.port in the config file or PUSHWORKER_HTTP_PORT (0 = any free port), or turn the server off with httpServer.enabled: false (PUSHWORKER_HTTP_ENABLED=false)")
        } catch {
            throw EndpointServerError(error.code, host: error.host, port: error.port,
                "cannot start the HTTP server on \(settings.host):\(settings.port): \(error.message); check httpServer.host / httpServer.port (PUSHWORKER_HTTP_HOST / PUSHWORKER_HTTP_PORT)")
        }
        logger.info("http server listening on http://\(server.address) (/metrics, /healthz, /readyz)")
        if board != nil { logger.info("status page on http://\(server.address)/ (data: /status.json)") }
        return server
    }

    private func stopHTTPServer() async {
        guard let server = serverBox.withLock({ server -> EndpointServer? in
            defer { server = nil }
            return server
        }) else { return }
        // MHD_stop_daemon joins the server's thread: keep that wait off the cooperative pool.
        _ = try? await DedicatedThread.run(name: "pushworker-http-stop") { server.stop() }
    }

    /// The log metadata of a result: where its record came from and what became of it.
    static func metadata(of result: ResultRecord) -> [String: String] {
        var metadata = [
            "topic": result.source.topic, "partition": String(result.source.partition), "offset": String(result.source.offset),
            "messageId": result.messageId, "type": result.type ?? "", "result": result.result.rawValue,
            "durationMs": ResultRecord.formatDuration(result.durationMs),
        ]
        if let reason = result.reason { metadata["reason"] = reason.rawValue }
        if let worker = result.worker { metadata["worker"] = worker }
        if let traceparent = result.traceparent { metadata["traceparent"] = traceparent }
        return metadata
    }

    /// Runs the pipeline, then drops the last reference to its consumer on a dedicated thread:
    /// `rd_kafka_destroy` joins librdkafka's threads and must not block the cooperative pool.
    private func runPipeline(consumerProperties: KafkaConfiguration, metrics: ServiceMetrics, health: HealthRelay, board: StatusBoard?) async throws {
        let release = ConsumerRelease()
        let outcome: Result<Void, any Error>
        do {
            try await runPipeline(consumerProperties: consumerProperties, metrics: metrics, health: health, board: board, release: release)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        // The pipeline's frame is gone and its objects no longer hold the consumer strongly: the release
        // drops the last reference.
        await release.releaseOnDedicatedThread()
        try outcome.get()
    }

    private func runPipeline(consumerProperties: KafkaConfiguration, metrics: ServiceMetrics, health: HealthRelay, board: StatusBoard?, release: ConsumerRelease) async throws {
        let tracker = OffsetTracker()
        let executor = BudgetedExecutor(logger: PushWorkerLogger(label: "pushworker.executor"), observer: { event in metrics.budgetEvent(event) })
        let kafkaLog = PushWorkerLogger(label: "pushworker.librdkafka").kafkaLogHandler
        let drainTimeoutMs = Int(configuration.effectiveDrainTimeout(for: registry).wholeMilliseconds)  // ≤ 2^31−1 ms + 10 s
        let rebalanceDrainTimeoutMs = Int(configuration.effectiveRebalanceDrainTimeout(for: registry).wholeMilliseconds)
        let rebalance = RebalanceRelay()
        // One group member per subscribed topic (KafkaGroupMembers: each topic's partitions are balanced
        // over the replicas on their own).
        let consumer = try KafkaGroupMembers(configuration: consumerProperties, topics: configuration.subscribedTopics, memberPerTopic: configuration.memberPerTopic, logHandler: kafkaLog, onRebalance: { event in
            rebalance.handler?(event)
        }, onStatistics: { statistics in
            metrics.statistics(statistics, client: .consumer)
        })
        release.hold(consumer)
        let storeLogger = logger
        let onDelivered: @Sendable (KafkaOutgoingRecord) -> Void = { [self] record in
            self.statistics.withLock { $0.resultsDelivered += 1 }
            onResult?(record)
        }
        let onReplaced: @Sendable () -> Void = { [self] in
            self.statistics.withLock { $0.recordsReplaced += 1 }
        }
        let publisher: any OutputPublisher
        let transactions: TransactionalPublisher?
        if configuration.exactlyOnce.enabled {
            let transactional = try TransactionalPublisher(
                properties: configuration.producerProperties, consumer: consumer, resultsTopic: configuration.resultsTopic,
                tracker: tracker, settings: configuration.exactlyOnce, logger: logger, logHandler: kafkaLog, metrics: metrics,
                onDelivered: onDelivered, onReplaced: onReplaced,
                onTransaction: { [self] event in
                    self.statistics.withLock { statistics in
                        switch event {
                        case .committed: statistics.transactionsCommitted += 1
                        case .aborted: statistics.transactionsAborted += 1
                        case .retried: statistics.transactionRetries += 1
                        }
                    }
                })
            publisher = transactional
            transactions = transactional
        } else {
            publisher = try ResultPublisher(
                properties: configuration.producerProperties, resultsTopic: configuration.resultsTopic, tracker: tracker,
                logger: logger, logHandler: kafkaLog, metrics: metrics,
                // Weak: a worker that ignores a fast stop's cancellation may keep the publisher alive after the
                // service has returned; it must not keep the consumer (its release belongs on a dedicated thread).
                storeOffsets: { [weak consumer] offsets in
                    guard let consumer else { return }
                    for (tp, error) in consumer.storeOffsets(offsets) {
                        storeLogger.debug("offset not stored (partition no longer assigned)", metadata: ["partition": "\(tp)", "error": error.message])
                    }
                },
                onDelivered: onDelivered,
                onRetried: { [self] count in
                    self.statistics.withLock { $0.resultDeliveryRetries += count }
                },
                onReplaced: onReplaced)
            transactions = nil
        }
        let retryTopic = configuration.retries.topic
        let dispatcher = JobDispatcher(
            registry: registry, validator: PayloadValidator(maxPayloadBytes: configuration.maxPayloadBytes),
            maxInFlight: configuration.maxInFlight, executor: executor,
            collapse: configuration.collapse, dedupe: configuration.dedupe,
            delay: configuration.retries.delaySettings,
            onOutputs: { [logger, deadLetter = configuration.deadLetter] outputs in
                var batch: [Publication] = []
                batch.reserveCapacity(outputs.count)
                for output in outputs {
                    switch output {
                    case .result(let result, let input, let retry):
                        if result.worker != nil { metrics.workerRan(type: result.type, durationMs: result.durationMs) }
                        // The status page's table of recent failures (a lock per failed result only).
                        if result.result == .failed, let board { board.recordFailed(result) }
                        // One line per result at debug level (built only when debug is on).
                        logger.debug("result", metadata: Self.metadata(of: result))
                        if let retry {
                            metrics.retryTopicRecords.increment(labels: ["retry"])
                            batch.append(.result(result, deadLetter: nil, retry: RetryRecord.make(for: input, retry: retry, topic: retryTopic)))
                        } else if let deadLetter, deadLetter.accepts(result) {
                            batch.append(.result(result, deadLetter: DeadLetterRecord.make(for: input, result: result, topic: deadLetter.topic), retry: nil))
                        } else {
                            batch.append(.result(result, deadLetter: nil, retry: nil))
                        }
                    case .forward(let input, let forward):
                        metrics.retryTopicRecords.increment(labels: [forward.kind.rawValue])
                        logger.debug("record sent to the retry topic", metadata: [
                            "kind": forward.kind.rawValue, "topic": input.source.topic, "partition": String(input.source.partition),
                            "offset": String(input.source.offset), "messageId": forward.messageId,
                        ])
                        batch.append(.forward(RetryRecord.make(for: input, forward: forward, topic: retryTopic), source: input.source))
                    }
                }
                publisher.submit(batch)
            })
        let crashGuard = try configuration.crashGuard.enabled ? CrashGuard(
            settings: CrashGuardState.Settings(deathLimit: configuration.crashGuard.deathLimit, leaseRecords: Int64(configuration.crashGuard.leaseRecords)),
            consumerProperties: consumerProperties, inputGroup: configuration.groupId, logger: logger, metrics: metrics, logHandler: kafkaLog,
            identify: { [dispatcher] in dispatcher.identify($0) }) : nil
        let loop = ConsumerLoop(
            consumer: consumer, dispatcher: dispatcher, publisher: publisher, transactions: transactions, tracker: tracker,
            crashGuard: crashGuard, maxBuffered: configuration.maxBufferedRecords, drainTimeoutMs: drainTimeoutMs,
            rebalanceDrainTimeoutMs: rebalanceDrainTimeoutMs, logger: logger, metrics: metrics,
            stopNow: { [self] in self.stopNowRequested.load(ordering: .acquiring) },
            statistics: { [self] change in self.statistics.withLock { change(&$0) } })
        let joined = JoinedOnce()
        rebalance.handler = { [logger, weak consumer] event in
            loop.rebalanced(event)
            // Once: every member (one per topic) has had its first assignment, so the process is in the
            // group's current generation (tests and operators wait for this line).
            if case .assigned = event, let consumer, consumer.everyMemberAssigned, joined.first() {
                logger.info("joined the consumer group: this process's group member of each subscribed topic has its first assignment", metadata: [
                    "topics": consumer.topics.joined(separator: ","), "partitions": String(consumer.assignment().count),
                ])
            }
        }
        // Weak: the metrics outlive nothing of the pipeline (the publisher holds the metrics).
        metrics.registry.onCollect { [weak metrics, weak dispatcher, weak tracker, weak publisher] in
            guard let metrics, let dispatcher, let tracker, let publisher else { return }
            metrics.jobsInFlight.set(Double(dispatcher.runningCount))
            metrics.recordsBuffered.set(Double(tracker.outstanding))
            metrics.dedupeEntries.set(Double(dispatcher.dedupeEntryCount))
            metrics.heldRecords.set(Double(dispatcher.heldCount))
            metrics.parkedKeys.set(Double(dispatcher.parkedKeyCount))
            metrics.resultsWaiting.set(Double(publisher.unacknowledged))
            metrics.oldestUnacknowledgedAge.set(publisher.oldestUnacknowledgedAge.map { Double($0.wholeMilliseconds) / 1000 } ?? 0)
        }
        health.current = ServiceHealth(
            loop: loop, publisher: publisher, executor: executor, metrics: metrics, stallThreshold: stallThreshold,
            stuckResultsAfter: configuration.health.stuckResultsAfter,
            statisticsIntervalMs: Int(consumerProperties["statistics.interval.ms"] ?? "0") ?? 0,
            stopping: { [self] in self.stopRequested.load(ordering: .acquiring) })
        consumerBox.withLock { $0 = consumer }
        publisher.prepareOutputTopics(configuration.outputTopics, timeoutMs: 10_000)
        _ = try? await DedicatedThread.run(name: "pushworker-connect") { consumer.connect(timeoutMs: 2000) }
        do {
            try consumer.subscribe()
        } catch {
            _ = await publisher.close(timeoutMs: 0, cutShort: { false }, cutShortTimeoutMs: 0)
            consumerBox.withLock { $0 = nil }
            health.current = nil
            rebalance.handler = nil
            throw error
        }
        logger.info("consuming", metadata: [
            "topics": configuration.inputTopics.joined(separator: ","), "groupId": configuration.groupId,
            "resultsTopic": configuration.resultsTopic, "deadLetterTopic": configuration.deadLetter?.topic ?? "(off)",
            "deadLetterReasons": configuration.deadLetter.map { $0.reasons?.joined(separator: ",") ?? "(every failed result)" } ?? "(off)",
            "bootstrap.servers": configuration.bootstrapServers,
            "workers": registry.types.joined(separator: ","), "maxInFlight": String(configuration.maxInFlight),
            "collapse": configuration.collapse ? "on" : "off",
            "exactlyOnce": configuration.exactlyOnce.enabled ? "on, transactional.id \(configuration.producerProperties["transactional.id"] ?? "")" : "(off)",
            "dedupe": configuration.dedupe.map { "window \($0.effectiveWindowMs) ms, at most \($0.effectiveMaxEntries) apns-ids" } ?? "(off)",
            "retryTopic": configuration.retries.enabled ? retryTopic : "(off)",
            "crashGuard": configuration.crashGuard.enabled
                ? "death limit \(configuration.crashGuard.deathLimit), leases of \(configuration.crashGuard.leaseRecords) records, group \(CrashGuard.groupId(for: configuration.groupId))" : "(off)",
            "allocator": MemoryAllocator.description,
        ])
        if stopRequested.load(ordering: .acquiring) { consumer.wakeUp() }
        // The status page: samples on a timer, and this member's snapshot to and the group's from the
        // status topic (StatusPageConfiguration).
        let exchange = board.map { StatusTopicExchange(board: $0, configuration: configuration, logger: logger, logHandler: kafkaLog) }
        var statusTasks: [Task<Void, Never>] = []
        if let board {
            let interval = configuration.statusPage.sampleInterval
            statusTasks.append(Task { await StatusSampler.run(board: board, metrics: metrics, dispatcher: dispatcher, consumer: consumer, interval: interval) })
        }
        if let exchange { statusTasks.append(Task { await exchange.run() }) }
        // The progress line and the "no partitions assigned" warning, until the consumer loop has ended.
        let reporter = StatusReporter(
            metrics: metrics, logger: logger, progressInterval: configuration.progressLogInterval,
            unassignedWarningInterval: configuration.unassignedWarningInterval,
            statisticsIntervalMs: Int(consumerProperties["statistics.interval.ms"] ?? "0") ?? 0,
            sessionTimeoutMs: Int(consumerProperties["session.timeout.ms"] ?? "") ?? Self.librdkafkaSessionTimeoutMs,
            maxPollIntervalMs: Int(consumerProperties["max.poll.interval.ms"] ?? "") ?? Self.librdkafkaMaxPollIntervalMs,
            subscribedTopics: configuration.subscribedTopics, groupId: configuration.groupId,
            stopping: { [self] in self.stopRequested.load(ordering: .acquiring) })
        let reporting = Task { await reporter.run() }
        var failure: Error?
        do {
            try await DedicatedThread.run(name: "pushworker-consumer") { [self] in
                try loop.run(until: { self.stopRequested.load(ordering: .acquiring) })
            }
            failure = nil
        } catch {
            logger.error("consumer failed; stopping", metadata: ["error": "\(error)"])
            failure = error
        }
        // The member no longer takes records: it stops publishing its snapshot (the others drop it after
        // the member timeout) and sampling. The tasks hold the consumer: they end before it is released.
        exchange?.stop()
        for task in statusTasks { task.cancel() }
        for task in statusTasks { await task.value }
        reporting.cancel()
        await reporting.value
        // The loop has let running jobs finish or reach their deadline (or, on a fast stop, cut them short);
        // now deliver their results. A fast stop, now or during this wait, shortens the wait.
        let fastStopMs = min(drainTimeoutMs, Int(Self.fastStopDeliveryTimeout.components.seconds) * 1000)
        let left = await publisher.close(
            timeoutMs: stopNowRequested.load(ordering: .acquiring) ? fastStopMs : drainTimeoutMs,
            cutShort: { [self] in self.stopNowRequested.load(ordering: .acquiring) }, cutShortTimeoutMs: fastStopMs)
        if left > 0 { logger.warning("results not acknowledged at shutdown; their records will be read again", metadata: ["count": String(left)]) }
        // Exactly-once: a fatal transactional error during the drain or the final commit stops the run too.
        if failure == nil, let fatal = transactions?.failure { failure = fatal }
        do {
            try await DedicatedThread.run(name: "pushworker-close") {
                let offsets = loop.storeCommittableBeforeClose()
                // Exactly-once: the transactions committed the offsets; nothing is stored for a plain commit.
                // The offsets are named explicitly: a commit librdkafka retried after an error may have
                // reached the coordinator after a newer one and set a partition back, and a commit of the
                // stored offsets would skip that partition as committed already (seen under
                // ThreadSanitizer with OffsetCommit errors injected: FaultLedgerTests.offsetCommitErrors).
                if transactions == nil { Self.finalCommit(offsets, consumer: consumer, logger: storeLogger, stopNow: { self.stopNowRequested.load(ordering: .acquiring) }) }
                try consumer.close()
                crashGuard?.close()
            }
        } catch {
            logger.warning("leaving the group failed", metadata: ["error": "\(error)"])
        }
        consumerBox.withLock { $0 = nil }
        rebalance.handler = nil
        // The checks hold the loop, which holds the consumer; the HTTP server answers "not ready" from now on.
        health.current = nil
        logger.info("stopped", metadata: ["resultsDelivered": String(currentStatistics.resultsDelivered)])
        if let failure { throw failure }
    }
}
