import PushWorkerCore
import PushWorkerKafka
import PushWorkerMetrics
import Synchronization

/// The service's Prometheus metrics (names are fixed: operators' alerts use them; docs/metrics.md
/// lists them). One instance per ``PushWorkerService/run()``.
///
/// Label cardinality is bounded: `type` is a registered worker type, `""` when the payload had none, or
/// `(unregistered)` for anything else read from input; `reason` takes at most
/// ``ServiceMetrics/reasonsPerType`` distinct values per `type`, the rest are counted as `(other)`.
///
/// Hot paths cost one `Mutex` per batch of acknowledged results and one per worker run; gauges of queue
/// lengths are read when scraped.
final class ServiceMetrics: Sendable {
    let registry = MetricsRegistry()
    let recordsConsumed: MetricCounter
    let results: MetricCounter
    let workerDuration: MetricHistogram
    let jobsInFlight: MetricGauge
    let recordsBuffered: MetricGauge
    let dedupeEntries: MetricGauge
    /// `pushworker_results_retried_total{type,reason}`: acknowledged results with `willRetry` true.
    let resultsRetried: MetricCounter
    /// `pushworker_retry_topic_records_total{kind}`: records sent to the retry topic.
    let retryTopicRecords: MetricCounter
    /// `pushworker_held_records`: records held in memory until their time.
    let heldRecords: MetricGauge
    /// `pushworker_parked_keys`: keys whose records follow a retry through the retry topic.
    let parkedKeys: MetricGauge
    let timeouts: MetricCounter
    let cancellationIgnored: MetricCounter
    let deliveryRetries: MetricCounter
    /// Exactly-once mode: transactions committed, aborted, and transactional calls made again after a
    /// retriable error.
    let transactionsCommitted: MetricCounter
    let transactionsAborted: MetricCounter
    let transactionsRetried: MetricCounter
    let deadLetters: MetricCounter
    let resultsWaiting: MetricGauge
    let produceErrors: MetricCounter
    let resultsReplaced: MetricCounter
    let oldestUnacknowledgedAge: MetricGauge
    let consumerLag: MetricGauge
    let rebalances: MetricCounter
    let jobsCutShortByRebalance: MetricCounter
    let revocationCommitFailures: MetricCounter
    /// `pushworker_crash_deaths_found_total`: deaths of a process found with a record running (crash guard).
    let crashDeathsFound: MetricCounter
    /// `pushworker_crash_isolated_records_total`: records run one at a time after an unclean end.
    let crashIsolatedRecords: MetricCounter
    /// `pushworker_crash_guard_write_failures_total`: markers the crash guard could not commit.
    let crashGuardWriteFailures: MetricCounter
    let assignedPartitions: MetricGauge
    /// `pushworker_input_partitions_assigned{topic}`: this member's partitions of each input topic.
    let inputPartitionsAssigned: MetricGauge
    /// `pushworker_group_balance_flags{flag}`: the status page's group balance flags (``GroupBalance``),
    /// set after each status page sample; no series while the status page is off.
    let groupBalanceFlags: MetricGauge
    let brokersUp: MetricGauge
    let producerQueueMessages: MetricGauge
    let requestTimeouts: MetricCounter
    let consumerGroupUp: MetricGauge
    let statisticsAge: MetricGauge
    let buildInfo: MetricGauge
    let logLinesDropped: MetricCounter
    /// ``PushWorkerLogger/droppedLineCount`` when last exported.
    private let logLinesDroppedSeen = Atomic<Int>(0)

    /// The most distinct `reason` label values per `type` in `pushworker_results_total`: 64.
    static let reasonsPerType = 64
    /// The `type` label of a type that no worker is registered for by name.
    static let unregisteredType = "(unregistered)"

    /// The most distinct `topic` label values of `pushworker_input_partitions_assigned`: 64 (the
    /// configured input topics; a cap only against a configuration with very many).
    static let inputTopicLabels = 64

    private let registeredTypes: Set<String>
    /// The input topics (the `topic` label of `pushworker_input_partitions_assigned`).
    private let inputTopics: [String]
    /// Whether the consumer starts a partition without a committed offset at its beginning
    /// (`auto.offset.reset` earliest, pushworker's default): then such a partition's lag is all its records.
    private let startsAtEarliest: Bool
    private let durationByType: [String: Series]
    private let resultSeries = Mutex<[ResultKey: Series]>([:])
    private let kafka = Mutex(KafkaState())

    /// Registers every metric.
    /// - Parameters:
    ///   - registeredTypes: the types workers are registered for by name (their series start at 0).
    ///   - startsAtEarliest: whether the consumer's `auto.offset.reset` is `earliest` (default true).
    ///   - outputTopics: the results topic and the dead-letter topic (their `pushworker_produce_errors_total`
    ///     series start at 0).
    ///   - inputTopics: the input topics (their `pushworker_input_partitions_assigned` series start at 0).
    /// - Throws: ``MetricsError`` (only if a name here were invalid: a programming error caught by tests).
    init(registeredTypes: [String], startsAtEarliest: Bool = true, outputTopics: [String] = [], inputTopics: [String] = []) throws {
        let r = registry
        recordsConsumed = try r.counter("pushworker_records_consumed_total", help: "Records taken from the input topics.")
        results = try r.counter(
            "pushworker_results_total",
            help: "Results acknowledged by the broker, by payload type (registered types by name, (unregistered) for others, empty when none), result and reason (empty when none; at most 64 reasons per type, then (other)).",
            labels: ["type", "result", "reason"], cap: LabelCap(label: "reason", per: "type", limit: Self.reasonsPerType))
        workerDuration = try r.histogram(
            "pushworker_worker_duration_seconds", help: "Run time of jobs a worker ran, in seconds (the budget for a timeout), by payload type.",
            labels: ["type"], buckets: MetricHistogram.durationBuckets)
        jobsInFlight = try r.gauge("pushworker_jobs_in_flight", help: "Workers running now.")
        recordsBuffered = try r.gauge("pushworker_records_buffered", help: "Records taken but unfinished: waiting, running, or with a result not yet acknowledged.")
        dedupeEntries = try r.gauge("pushworker_dedupe_entries", help: "apns-ids remembered by the dedupe window (0 when dedupe is off); at most dedupe.maxEntries.")
        resultsRetried = try r.counter(
            "pushworker_results_retried_total",
            help: "Results acknowledged with willRetry true (a retryable failure whose record runs again), by payload type and reason as in pushworker_results_total, where they are counted too; subtract them for failures that are final.",
            labels: ["type", "reason"], cap: LabelCap(label: "reason", per: "type", limit: Self.reasonsPerType))
        retryTopicRecords = try r.counter(
            "pushworker_retry_topic_records_total",
            help: "Records sent to the retry topic, by kind: retry (the next attempt of a retryable failure), scheduled (pushworker-not-before later than retries.maxHoldMs), requeued (read from the retry topic, held retries.maxHoldMs and still not due within it), follower (behind a retry of its key).",
            labels: ["kind"])
        heldRecords = try r.gauge("pushworker_held_records", help: "Records held in memory until their time (a retry's backoff, a pushworker-not-before); at most retries.maxHeld scheduled ones.")
        parkedKeys = try r.gauge("pushworker_parked_keys", help: "Keys whose new records follow an earlier record of theirs through the retry topic, to keep their order.")
        timeouts = try r.counter("pushworker_timeouts_total", help: "Worker runs that reached their budget and were cancelled, by payload type.", labels: ["type"])
        cancellationIgnored = try r.counter(
            "pushworker_cancellation_ignored_total",
            help: "Worker runs still running 1 s after their deadline (they ignore cancellation), by payload type.", labels: ["type"])
        deliveryRetries = try r.counter("pushworker_result_delivery_retries_total", help: "Results (and dead letters) produced again after librdkafka reported them undelivered.")
        transactionsCommitted = try r.counter("pushworker_transactions_committed_total", help: "Exactly-once mode: transactions committed (results, dead letters and input offsets written together).")
        transactionsAborted = try r.counter("pushworker_transactions_aborted_total", help: "Exactly-once mode: transactions aborted (their input records are read and run again).")
        transactionsRetried = try r.counter("pushworker_transactions_retried_total", help: "Exactly-once mode: transactional calls made again after librdkafka returned a retriable error (e.g. _TIMED_OUT).")
        deadLetters = try r.counter(
            "pushworker_dead_letters_total",
            help: "Input records copied to the dead-letter topic and acknowledged, by payload type (as in pushworker_results_total) and reason.",
            labels: ["type", "reason"], cap: LabelCap(label: "reason", per: "type", limit: Self.reasonsPerType))
        resultsWaiting = try r.gauge("pushworker_results_waiting", help: "Results produced but not yet acknowledged by the broker, plus the backlog waiting to be produced.")
        produceErrors = try r.counter(
            "pushworker_produce_errors_total",
            help: "Results and dead letters librdkafka did not take or did not deliver (a full local queue not counted), by topic and class: transient (kept, produced again), recordRejected (can never be produced as it is: replaced by a smaller record), topicRefused (kept until the topic accepts writes: ACLs, topic missing), fatal (the producer must be restarted).",
            labels: ["topic", "class"])
        resultsReplaced = try r.counter(
            "pushworker_results_replaced_total",
            help: "Records that could never be produced as they were and were replaced by a smaller one, by kind (result or deadLetter) and stage (withoutHeaders, minimal, stub, stubWithoutKey).",
            labels: ["kind", "stage"])
        oldestUnacknowledgedAge = try r.gauge(
            "pushworker_oldest_unacknowledged_result_age_seconds",
            help: "Seconds the oldest result (or dead letter) not yet acknowledged by the broker has waited since it was produced, 0 when none waits.")
        consumerLag = try r.gauge(
            "pushworker_consumer_lag",
            help: "Records behind the end of each assigned partition (librdkafka statistics consumer_lag: end offset minus the stored or committed offset).",
            labels: ["topic", "partition"])
        rebalances = try r.counter("pushworker_rebalances_total", help: "Rebalance events of the consumer group member: assigned, revoked or lost.", labels: ["event"])
        jobsCutShortByRebalance = try r.counter(
            "pushworker_jobs_cut_short_by_rebalance_total",
            help: "Jobs of revoked partitions still running at rebalanceDrainTimeoutMs, and jobs of lost partitions, cut short without a result: their partitions' next owner runs their records again.")
        revocationCommitFailures = try r.counter(
            "pushworker_revocation_commit_failures_total",
            help: "Revocations whose commit of the revoked partitions' acknowledged offsets failed (e.g. REBALANCE_IN_PROGRESS): librdkafka tries again at the unassign; records whose commit is refused run again on the next owner.")
        crashDeathsFound = try r.counter(
            "pushworker_crash_deaths_found_total",
            help: "Deaths of a pushworker process found with a record running (the crash guard's marker): the record runs again alone, or at the death limit gets failed / workerCrashed.")
        crashIsolatedRecords = try r.counter(
            "pushworker_crash_isolated_records_total",
            help: "Records run one at a time because their partition's last owner did not stop cleanly (the crash guard).")
        crashGuardWriteFailures = try r.counter(
            "pushworker_crash_guard_write_failures_total",
            help: "Crash guard markers that could not be committed: records went on unguarded.")
        assignedPartitions = try r.gauge("pushworker_assigned_partitions", help: "Partitions assigned to this member of the consumer group.")
        inputPartitionsAssigned = try r.gauge(
            "pushworker_input_partitions_assigned",
            help: "Partitions of each input topic assigned to this process (0: it takes no records of that topic, e.g. more replicas than partitions).",
            labels: ["topic"], cap: LabelCap(label: "topic", limit: Self.inputTopicLabels))
        groupBalanceFlags = try r.gauge(
            "pushworker_group_balance_flags",
            help: "The status page's view of the consumer group (statusPage on): idleMember = members holding no input partition while the group has input lag, surplusMembers = the most members beyond an input topic's partition count, skew = topics whose partitions differ by more than 1 between members; 0 when not raised.",
            labels: ["flag"])
        brokersUp = try r.gauge("pushworker_kafka_brokers_up", help: "Broker connections up, by client (librdkafka statistics).", labels: ["client"])
        producerQueueMessages = try r.gauge("pushworker_kafka_producer_queue_messages", help: "Results in the producer's librdkafka queue, not yet acknowledged (statistics msg_cnt).")
        requestTimeouts = try r.counter("pushworker_kafka_request_timeouts_total", help: "Kafka requests that timed out, by client (librdkafka statistics req_timeouts).", labels: ["client"])
        consumerGroupUp = try r.gauge("pushworker_kafka_consumer_group_up", help: "1 when the consumer group's coordinator connection is up (statistics cgrp.state up), else 0.")
        statisticsAge = try r.gauge("pushworker_kafka_statistics_age_seconds", help: "Seconds since the latest librdkafka statistics of each client arrived.", labels: ["client"])
        logLinesDropped = try r.counter(
            "pushworker_log_lines_dropped_total",
            help: "Log lines that could not be written to stderr (closed with 2>&-, or a pipe whose reader has gone) and were dropped; the service goes on.")
        buildInfo = try r.gauge("pushworker_build_info", help: "Always 1; labels: pushworker version and the linked librdkafka version.", labels: ["version", "librdkafka"])

        self.registeredTypes = Set(registeredTypes)
        var uniqueInputs: [String] = []
        for topic in inputTopics where !uniqueInputs.contains(topic) { uniqueInputs.append(topic) }
        self.inputTopics = uniqueInputs
        for topic in uniqueInputs { inputPartitionsAssigned.set(0, labels: [topic]) }
        self.startsAtEarliest = startsAtEarliest
        var durations: [String: Series] = [:]
        for type in registeredTypes {
            durations[type] = workerDuration.series([type])
            _ = timeouts.series([type])
            _ = cancellationIgnored.series([type])
        }
        durationByType = durations
        for event in ["assigned", "revoked", "lost"] { _ = rebalances.series([event]) }
        jobsCutShortByRebalance.increment(by: 0)
        revocationCommitFailures.increment(by: 0)
        crashDeathsFound.increment(by: 0)
        crashIsolatedRecords.increment(by: 0)
        crashGuardWriteFailures.increment(by: 0)
        recordsConsumed.increment(by: 0)
        for topic in outputTopics {
            for failure in ProduceFailure.allCases { produceErrors.increment(by: 0, labels: [topic, failure.rawValue]) }
        }
        for (kind, stage) in [("result", "withoutHeaders"), ("result", "minimal"), ("deadLetter", "stub"), ("deadLetter", "stubWithoutKey")] {
            resultsReplaced.increment(by: 0, labels: [kind, stage])
        }
        deliveryRetries.increment(by: 0)
        transactionsCommitted.increment(by: 0)
        transactionsAborted.increment(by: 0)
        transactionsRetried.increment(by: 0)
        for kind in ["retry", "scheduled", "requeued", "follower"] { retryTopicRecords.increment(by: 0, labels: [kind]) }
        // Present from the start, so that alerts subtracting them (PushworkerWorkerErrors) have a series.
        for type in registeredTypes + [Self.unregisteredType, ""] { resultsRetried.increment(by: 0, labels: [type, ResultReason.workerError.rawValue]) }
        requestTimeouts.increment(by: 0, labels: [Client.consumer.rawValue])
        requestTimeouts.increment(by: 0, labels: [Client.producer.rawValue])
        buildInfo.set(1, labels: [PushWorkerService.version, KafkaLibrary.versionString])
        logLinesDropped.increment(by: 0)
        registry.onCollect { [weak self] in
            guard let self else { return }
            let dropped = PushWorkerLogger.droppedLineCount
            let seen = self.logLinesDroppedSeen.exchange(dropped, ordering: .relaxed)
            if dropped > seen { self.logLinesDropped.increment(by: Double(dropped - seen)) }
            let (consumerAt, producerAt, assignment) = self.kafka.withLock { ($0.consumer.receivedAtNs, $0.producer.receivedAtNs, $0.assigned) }
            let now = WallClock.monotonicNs()
            for (client, at) in [(Client.consumer, consumerAt), (.producer, producerAt)] where at != 0 {
                self.statisticsAge.set(Double(now - at) / 1e9, labels: [client.rawValue])
            }
            self.assignedPartitions.set(Double(assignment.count))
            for topic in self.inputTopics {
                self.inputPartitionsAssigned.set(Double(assignment.count(where: { $0.topic == topic })), labels: [topic])
            }
        }
    }

    /// The text exposition of `/metrics`: the service's metrics, then the workers' own (``WorkerRegistry/metrics``,
    /// whose names cannot start `pushworker_`, so the two never clash).
    func exposition(including workerMetrics: MetricsRegistry) -> String {
        PrometheusText.render(registry.snapshot() + workerMetrics.snapshot())
    }

    /// The `type` label of a payload type: itself when a worker is registered for it by name, `""` when
    /// there is none, ``unregisteredType`` otherwise.
    func typeLabel(_ type: String?) -> String {
        guard let type else { return "" }
        return registeredTypes.contains(type) ? type : Self.unregisteredType
    }

    /// Counts results the broker acknowledged (one lock per batch).
    func resultsAcknowledged(_ keys: [ResultKey]) {
        guard !keys.isEmpty else { return }
        var batch: [Series] = []
        batch.reserveCapacity(keys.count)
        resultSeries.withLock { cache in
            // Consecutive results mostly share their labels: compare with the previous key before hashing.
            var previous: (key: ResultKey, series: Series)?
            for key in keys {
                if let previous, previous.key == key {
                    batch.append(previous.series)
                    continue
                }
                if let series = cache[key] {
                    batch.append(series)
                    previous = (key, series)
                    continue
                }
                let series = results.series([typeLabel(key.type), key.result.rawValue, key.reason?.rawValue ?? ""])
                // Types and reasons come from input and workers: remember a bounded number of keys.
                if cache.count < 4096 { cache[key] = series }
                batch.append(series)
                previous = (key, series)
            }
        }
        results.increment(batch)
    }

    /// Counts acknowledged results with `willRetry` true (rare: no label cache).
    func retriedResultsAcknowledged(_ keys: [ResultKey]) {
        for key in keys { resultsRetried.increment(by: 1, labels: [typeLabel(key.type), key.reason?.rawValue ?? ""]) }
    }

    /// Counts dead letters the broker acknowledged (rare: no label cache).
    func deadLettersAcknowledged(_ keys: [ResultKey]) {
        for key in keys {
            deadLetters.increment(by: 1, labels: [typeLabel(key.type), key.reason?.rawValue ?? ""])
        }
    }

    /// Counts a record librdkafka did not take or did not deliver (`topic` is an output topic: bounded).
    func produceError(topic: String, failure: ProduceFailure, count: Int = 1) {
        produceErrors.increment(by: Double(count), labels: [topic, failure.rawValue])
    }

    /// Counts a record replaced by a smaller one (`kind` `result` or `deadLetter`, `stage` the replacement's name).
    func replaced(kind: String, stage: String) {
        resultsReplaced.increment(labels: [kind, stage])
    }

    /// Records the run time of a job a worker ran.
    func workerRan(type: String?, durationMs: Double) {
        let seconds = durationMs / 1000
        if let type, let series = durationByType[type] {
            workerDuration.observe(seconds, series: series)
        } else {
            workerDuration.observe(seconds, labels: [typeLabel(type)])
        }
    }

    /// Counts a timeout or an ignored cancellation.
    func budgetEvent(_ event: BudgetEvent) {
        switch event {
        case .timedOut(let type, _): timeouts.increment(labels: [typeLabel(type)])
        case .ignoredCancellation(let type, _): cancellationIgnored.increment(labels: [typeLabel(type)])
        }
    }

    /// Counts a rebalance event and updates the assignment (and the lag series kept for it).
    func rebalanced(_ event: KafkaRebalanceEvent) {
        let latest = kafka.withLock { state -> KafkaStatistics? in
            switch event {
            case .assigned(let partitions): state.assigned.formUnion(partitions)
            case .revoking(let partitions), .lost(let partitions): state.assigned.subtract(partitions)
            }
            return state.consumer.latest
        }
        switch event {
        case .assigned: rebalances.increment(labels: ["assigned"])
        case .revoking: rebalances.increment(labels: ["revoked"])
        case .lost: rebalances.increment(labels: ["lost"])
        }
        if let latest { updateLag(latest) }
    }

    /// Sets `pushworker_group_balance_flags` from the status page's view of the group.
    func groupBalance(_ balance: GroupBalance) {
        for kind in GroupBalance.Kind.allCases { groupBalanceFlags.set(balance.gauge(kind), labels: [kind.rawValue]) }
    }

    /// The partition count of each topic the consumer's latest statistics list (empty before the first).
    var knownPartitionCounts: [String: Int] {
        kafka.withLock { state in
            (state.consumer.latest?.partitions ?? []).reduce(into: [String: Int]()) { $0[$1.topic, default: 0] += 1 }
        }
    }

    /// The partitions assigned now, from the rebalance events.
    var assigned: Set<TopicPartition> { kafka.withLock { $0.assigned } }

    /// Takes a librdkafka statistics report of one client (on that client's poll thread).
    func statistics(_ statistics: KafkaStatistics, client: Client) {
        let timedOut = kafka.withLock { state -> Int in
            var clientState = client == .consumer ? state.consumer : state.producer
            var increase = 0
            for broker in statistics.brokers {
                let previous = clientState.requestTimeouts[broker.name] ?? 0
                if broker.requestTimeouts > previous { increase += broker.requestTimeouts - previous }
                clientState.requestTimeouts[broker.name] = broker.requestTimeouts
            }
            clientState.latest = statistics
            clientState.receivedAtNs = WallClock.monotonicNs()
            if client == .consumer { state.consumer = clientState } else { state.producer = clientState }
            return increase
        }
        if timedOut > 0 { requestTimeouts.increment(by: Double(timedOut), labels: [client.rawValue]) }
        brokersUp.set(Double(statistics.brokersUp), labels: [client.rawValue])
        switch client {
        case .consumer:
            consumerGroupUp.set(statistics.consumerGroup?.state == "up" ? 1 : 0)
            updateLag(statistics)
        case .producer:
            producerQueueMessages.set(Double(statistics.messagesQueued))
        }
    }

    /// The latest statistics of `client` and how long ago they arrived, or `nil` before the first.
    func latestStatistics(_ client: Client) -> (statistics: KafkaStatistics, age: Duration)? {
        kafka.withLock { state in
            let clientState = client == .consumer ? state.consumer : state.producer
            guard let latest = clientState.latest else { return nil }
            return (latest, .nanoseconds(max(0, WallClock.monotonicNs() - clientState.receivedAtNs)))
        }
    }

    /// Sets the lag of every assigned partition: librdkafka's `consumer_lag`; for a partition with no stored
    /// or committed offset yet (librdkafka says -1) that the consumer reads from its beginning, every record
    /// in it (`hi_offset - lo_offset`), so that a group stuck before its first result still shows its lag.
    private func updateLag(_ statistics: KafkaStatistics) {
        let assigned = self.assigned
        consumerLag.replaceAll(statistics.partitions.compactMap { partition in
            guard assigned.contains(TopicPartition(topic: partition.topic, partition: partition.partition)) else { return nil }
            var lag = partition.consumerLag
            if lag < 0 && startsAtEarliest && partition.highWatermark >= 0 && partition.lowWatermark >= 0 {
                lag = max(0, partition.highWatermark - partition.lowWatermark)
            }
            guard lag >= 0 else { return nil }
            return ([partition.topic, String(partition.partition)], Double(lag))
        })
    }
}
