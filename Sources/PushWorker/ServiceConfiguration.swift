import PushWorkerCore
import PushWorkerKafka

/// Everything `pushworker run` needs, with the defaults the contract names.
///
/// Loaded from a JSON5 file (JSON with comments, unquoted keys and trailing commas) by
/// ``ServiceConfiguration/load(path:environment:)``; see docs/configuration.md.
public struct ServiceConfiguration: Sendable, Equatable {
    /// librdkafka properties for both the consumer and the results producer (`bootstrap.servers`, security
    /// settings, …), passed through unchanged. Default: `bootstrap.servers=localhost:9092`.
    public var kafka = KafkaConfiguration(["bootstrap.servers": "localhost:9092"])
    /// librdkafka properties for the consumer only, set over ``kafka``.
    public var consumer = KafkaConfiguration()
    /// librdkafka properties for the results producer only, set over ``kafka``.
    public var producer = KafkaConfiguration()
    /// The consumer group (`group.id`). Default `pushworker`.
    public var groupId = "pushworker"
    /// The input topics. Default `["pushes"]`.
    public var inputTopics = ["pushes"]
    /// The results topic. Default `push-results`.
    public var resultsTopic = "push-results"
    /// The dead-letter topic and which `failed` results send their input record there, or `nil` (the
    /// default): no dead letters, the results topic alone says what failed.
    public var deadLetter: DeadLetterConfiguration?
    /// Retries and scheduled pushes (file `retries`): on by default, through the retry topic
    /// `push-retries` (``RetryConfiguration``).
    public var retries = RetryConfiguration()
    /// The topics the service writes: ``resultsTopic``, the ``deadLetter`` topic when one is set, and the
    /// retry topic when ``retries`` are enabled (the service also reads that one).
    public var outputTopics: [String] {
        [resultsTopic] + (deadLetter.map { [$0.topic] } ?? []) + (retries.enabled ? [retries.topic] : [])
    }
    /// The topics the service subscribes to: ``inputTopics``, and the retry topic when ``retries`` are enabled.
    public var subscribedTopics: [String] { inputTopics + (retries.enabled ? [retries.topic] : []) }
    /// Whether waiting records of one key with the same `apns-collapse-id` collapse to the newest (file
    /// `collapse`): the older ones get `noData` / `collapsed` without running. Default `true` (APNs's own
    /// behaviour for the header); records without the header or without a key are never collapsed.
    public var collapse = true
    /// The `apns-id` dedupe window (file `dedupe`), or `nil` (the default): no dedupe. When set, a record
    /// repeating the `apns-id` of one taken within the window gets `noData` / `duplicate` without running
    /// (see ``DedupeConfiguration`` for what counts as a repeat, and what restarts and rebalances forget).
    public var dedupe: DedupeConfiguration?
    /// The exactly-once results mode (file `exactlyOnce`): off by default. When on, results, dead letters
    /// and input offsets are written in Kafka transactions (``ExactlyOnceConfiguration``).
    public var exactlyOnce = ExactlyOnceConfiguration()
    /// The crash guard (file `crashGuard`): on by default; a record that kills the process is found and,
    /// at the third death with it running, answered `failed` / `workerCrashed` (``CrashGuardConfiguration``).
    public var crashGuard = CrashGuardConfiguration()
    /// The most workers running at once. Default 1024.
    public var maxInFlight = 1024
    /// Records taken but not yet finished (waiting, running or with results not yet acknowledged) above
    /// which the consumer pauses its partitions; it resumes below half of it. Default 50 000.
    public var maxBufferedRecords = 50_000
    /// Whether each subscribed topic gets a consumer-group member of its own (``KafkaGroupMembers``), so
    /// that every topic's partitions are balanced over the replicas on their own. Default `true`
    /// (`PUSHWORKER_MEMBER_PER_TOPIC=false` turns it off): off, one member subscribes every topic, and
    /// `cooperative-sticky`, which balances the partition count over the whole subscription, can give a
    /// second replica only the retry topic's partitions (docs/guarantees.md, "One group member per topic").
    public var memberPerTopic = true
    /// The largest record value accepted, a count of bytes (file `maxPayloadBytes`). Default 4096 (APNs's
    /// background-push limit).
    public var maxPayloadBytes = 4096
    /// The budget of workers declared without one (file `defaultBudgetMs`, in milliseconds). Default 30 s
    /// (iOS's 30 s). Takes effect clamped to 1 ms … 2 147 483 647 ms (about 24.8 days), the range the file
    /// accepts: a Swift value below 1 ms (zero, negative) counts as 1 ms, a longer one as the maximum.
    public var defaultBudget: Duration = .seconds(30)
    /// How long a shutdown or a partition revocation waits for running jobs and their results (file
    /// `drainTimeoutMs`, in milliseconds), or `nil` (the default) for the largest budget plus 10 s; see
    /// ``effectiveDrainTimeout(for:)``. Takes effect clamped to 0 … 2 147 483 647 ms (negative counts as
    /// zero) and in whole milliseconds (a sub-millisecond part is dropped).
    public var drainTimeout: Duration?
    /// How long a partition revocation (a rebalance) waits for the revoked partitions' running jobs and
    /// their results before it cuts the jobs still running short, without a result (file
    /// `rebalanceDrainTimeoutMs`, in milliseconds), or `nil` (the default) for the drain timeout
    /// (``effectiveDrainTimeout(for:)``) but at most 10 s; see ``effectiveRebalanceDrainTimeout(for:)``.
    /// The wait blocks the consumer's poll thread and holds the group's rebalance, so it is kept short.
    /// Takes effect clamped to 0 … 2 147 483 647 ms (negative counts as zero), in whole milliseconds.
    public var rebalanceDrainTimeout: Duration?
    /// The workers by payload `type`.
    public var workers: [String: WorkerSpec] = [:]
    /// The worker for a missing or unregistered `type`, or `nil` (then: `noData` / `noWorker`).
    public var defaultWorker: WorkerSpec?
    /// Environment variables that hold secrets of the configured workers (http workers' `headersFromEnv`):
    /// exec worker programs do not inherit them (nor any `PUSHWORKER_*` variable).
    public var secretVariables: Set<String> = []
    /// The payload types this deployment handles, declared up front (like iOS's
    /// `BGTaskSchedulerPermittedIdentifiers`), or `nil` to accept whatever workers are registered. When set,
    /// startup is refused if a registered worker's type is not listed or a listed type has no worker
    /// (``checkRoutes(_:)``).
    public var permittedTypes: [String]?
    /// The log level. Default `info`.
    public var logLevel: PushWorkerLogger.Level = .info
    /// The log format. Default `text`.
    public var logFormat: PushWorkerLogger.Format = .text
    /// How often the service logs a progress line at `info` (file `log.progressIntervalMs`, in
    /// milliseconds): records/s over the interval, results by outcome, consumer lag, running jobs and
    /// results waiting for delivery, read from the service's metrics (docs/operations.md "Logs"). Default
    /// 30 s; zero or less turns the line off (file `progressIntervalMs: 0`). Takes effect clamped to at
    /// most 2 147 483 647 ms and to at least 1 s (lines come at most once a second however short it is).
    public var progressLogInterval: Duration = .seconds(30)
    /// How often the service warns while its consumer has no partition assigned (file
    /// `log.unassignedWarningIntervalMs`, in milliseconds): how long it has waited and the likely cause
    /// (a rebalance, other members holding every partition, the broker unreachable, …; docs/operations.md
    /// "Logs"). The first warning comes this long after the service subscribed, or lost its last partition.
    /// Default 10 s; zero or less turns the warning off. Clamped as ``progressLogInterval``.
    public var unassignedWarningInterval: Duration = .seconds(10)
    /// The embedded cluster of `pushworker dev`: partitions per input topic (default 4).
    public var devPartitions = 4
    /// The HTTP server of `/metrics`, `/healthz` and `/readyz` (`httpServer`): enabled on 0.0.0.0:9400 by
    /// default.
    public var httpServer = HTTPServerConfiguration()
    /// The status page and the group's status topic (`statusPage`): on by default, topic `push-status`
    /// (``StatusPageConfiguration``). The page is served only while ``httpServer`` is enabled; the
    /// snapshot is published whenever this is enabled, so members without a server still show on others' pages.
    public var statusPage = StatusPageConfiguration()
    /// Thresholds of the health checks (`health`): `/readyz` fails once a result has waited 60 s for the
    /// broker's acknowledgement, by default.
    public var health = HealthConfiguration()
    /// Settings of Swift workers (`workerSettings`): one object per section, read by the workers a custom
    /// executable registers (``WorkerRegistry/settings(_:section:)``); a section no worker reads is refused
    /// by ``checkRoutes(_:)``. Default: none.
    public var workerSettings = WorkerSettings()

    /// The built-in defaults (contract section 5).
    public init() {}

    /// The registry of the configured workers, carrying ``workerSettings`` for Swift workers. Result
    /// `worker` names are `<kind>:<type>`, and `<kind>:default` for the default worker.
    public func makeRegistry() -> WorkerRegistry {
        var registry = WorkerRegistry(defaultBudget: defaultBudget.asBudgetSetting, workerSettings: workerSettings)
        for (type, spec) in workers.sorted(by: { $0.key < $1.key }) {
            registry.register(type: type, worker: spec.makeWorker(withholding: secretVariables), name: spec.registeredName(for: type), budget: spec.budget?.asBudgetSetting, maxConcurrent: spec.maxConcurrent, retry: spec.retry)
        }
        if let spec = defaultWorker {
            registry.setDefault(worker: spec.makeWorker(withholding: secretVariables), name: spec.registeredName(for: "default"), budget: spec.budget?.asBudgetSetting, maxConcurrent: spec.maxConcurrent, retry: spec.retry)
        }
        return registry
    }

    /// The consumer's librdkafka properties: ``kafka``, then pushworker's own defaults (a user's setting
    /// wins), then ``consumer``. pushworker sets `group.id`, `enable.auto.offset.store=false` (offsets
    /// are stored only once results are acknowledged), `auto.offset.reset=earliest` (a new group starts
    /// at the beginning, so no push is skipped), `partition.assignment.strategy=cooperative-sticky`,
    /// `auto.commit.interval.ms=200` (acknowledged offsets are committed within 200 ms, so a crash re-runs
    /// little; librdkafka's own 5000 ms re-ran up to 5 s of work per crash), `queued.min.messages=40000`
    /// (``defaultQueuedMinMessages``: the records prefetched into the consumer's queue; librdkafka's own
    /// 100 000), and, when the HTTP server is enabled, `statistics.interval.ms=5000` (metrics and readiness
    /// read them).
    ///
    /// In the exactly-once mode (``exactlyOnce``) the group's offsets come only from the transactions
    /// (`rd_kafka_send_offsets_to_transaction`): `enable.auto.commit=false` whatever is configured, and no
    /// `auto.commit.interval.ms`. Inputs are read with librdkafka's default `isolation.level`,
    /// `read_committed` (records of aborted transactions upstream are skipped; not emulated by the 2.0.2 mock).
    public var consumerProperties: KafkaConfiguration {
        var properties = kafka.merging(consumer)
        properties["group.id"] = groupId
        properties["enable.auto.offset.store"] = "false"
        properties.setDefault("auto.offset.reset", "earliest")
        properties.setDefault("partition.assignment.strategy", "cooperative-sticky")
        if exactlyOnce.enabled {
            properties["enable.auto.commit"] = "false"
        } else {
            properties.setDefault("auto.commit.interval.ms", Self.defaultAutoCommitIntervalMs)
        }
        properties.setDefault("queued.min.messages", Self.defaultQueuedMinMessages)
        if httpServer.enabled { properties.setDefault("statistics.interval.ms", Self.defaultStatisticsIntervalMs) }
        return properties
    }

    /// The results producer's librdkafka properties: ``kafka``, `enable.idempotence=true` unless set,
    /// `statistics.interval.ms=5000` unless set when the HTTP server is enabled, then ``producer``. In the
    /// exactly-once mode, `transactional.id` is ``ExactlyOnceConfiguration/effectiveTransactionalId(groupId:hostName:)``
    /// (librdkafka then makes the producer idempotent itself).
    public var producerProperties: KafkaConfiguration {
        var properties = kafka.merging(producer)
        if exactlyOnce.enabled {
            properties["transactional.id"] = exactlyOnce.effectiveTransactionalId(groupId: groupId)
        } else {
            properties.setDefault("enable.idempotence", "true")
        }
        if httpServer.enabled { properties.setDefault("statistics.interval.ms", Self.defaultStatisticsIntervalMs) }
        return properties
    }

    /// ``producerProperties`` as the at-least-once mode has them (no `transactional.id`), for commands
    /// that produce outside transactions (`pushworker redrive`) whatever ``exactlyOnce`` says.
    public var nonTransactionalProducerProperties: KafkaConfiguration {
        var plain = self
        plain.exactlyOnce.enabled = false
        return plain.producerProperties
    }

    /// How often librdkafka's auto-commit commits the stored offsets (`auto.commit.interval.ms`, in
    /// milliseconds) when neither ``kafka`` nor ``consumer`` sets it: 200. A SIGKILL re-runs the results
    /// acknowledged since the last commit (at most this long of work). The broker's cost is at most 5
    /// OffsetCommit requests a second per member, and none while no offset moves: librdkafka 2.0.2 leaves
    /// a partition out of a commit when its stored offset equals the committed one, and sends nothing
    /// when no partition is left.
    static let defaultAutoCommitIntervalMs = "200"

    /// How many records librdkafka prefetches into the consumer's queue before it stops fetching
    /// (`queued.min.messages`) when neither ``kafka`` nor ``consumer`` sets it: 40 000 (librdkafka: 100 000).
    /// librdkafka keeps each queued record with a few hundred bytes of its own bookkeeping besides the value,
    /// and a full queue of 100 000 was most of pushworker's peak memory beyond its runtime. The queue is
    /// refilled as soon as it has room again (``KafkaConsumer``: a wake-up of the partition leaders before
    /// librdkafka 2.2.0, `fetch.queue.backoff.ms=10` from 2.2.0), so 40 000 still hold a fraction of a second
    /// of a noop worker's records; `queued.max.messages.kbytes` (64 MiB) still bounds their bytes. Measured
    /// with the independent benchmark (200 000 records waiting in 16 partitions): peak RSS 94–133 MB with
    /// 100 000 (two sets of 3 runs), 71–117 MB, median 85 MB, with 40 000 (5 runs), at the same records/s
    /// (docs/performance.md).
    static let defaultQueuedMinMessages = "40000"

    /// librdkafka's statistics interval pushworker sets when the HTTP server is enabled and the user did not.
    static let defaultStatisticsIntervalMs = "5000"

    /// How long drains wait (see ``drainTimeout``), counting the configured workers' budgets only:
    /// ``drainTimeout`` when set (clamped to 0 … 2 147 483 647 ms), else the largest budget in effect
    /// (``defaultBudget`` and each worker's, each clamped as ``makeRegistry()`` does) plus 10 s.
    /// ``effectiveDrainTimeout(for:)`` also counts Swift workers'.
    public var effectiveDrainTimeout: Duration {
        if let drainTimeout { return drainTimeout.asWaitSetting }
        let budgets = workers.values.map { ($0.budget ?? defaultBudget).asBudgetSetting }
            + [(defaultWorker?.budget ?? defaultBudget).asBudgetSetting, defaultBudget.asBudgetSetting]
        return (budgets.max() ?? defaultBudget.asBudgetSetting) + .seconds(10)
    }

    /// How long shutdown and revocation drains wait for running jobs and then for their results:
    /// ``drainTimeout`` when set (clamped to 0 … 2 147 483 647 ms), else the largest budget of any worker
    /// in `registry` (configured or registered in Swift, counted up to 2 147 483 647 ms) plus 10 s, so that
    /// a running job of any type can finish or reach its deadline. The service waits this in whole
    /// milliseconds (a sub-millisecond part is dropped).
    public func effectiveDrainTimeout(for registry: WorkerRegistry) -> Duration {
        if let drainTimeout { return drainTimeout.asWaitSetting }
        return max(effectiveDrainTimeout, registry.largestBudget.asWaitSetting + .seconds(10))
    }

    /// The longest rebalance drain timeout pushworker picks on its own: 10 s.
    public static let defaultRebalanceDrainTimeoutLimit: Duration = .seconds(10)

    /// How long a revocation waits for the revoked partitions' running jobs and their results (see
    /// ``rebalanceDrainTimeout``): ``rebalanceDrainTimeout`` when set (clamped to 0 … 2 147 483 647 ms),
    /// else the smaller of ``effectiveDrainTimeout(for:)`` and ``defaultRebalanceDrainTimeoutLimit`` (10 s).
    /// Jobs still running then are cut short without a result and their records are read again by the
    /// partitions' next owner (docs/guarantees.md, "Rebalances").
    public func effectiveRebalanceDrainTimeout(for registry: WorkerRegistry) -> Duration {
        if let rebalanceDrainTimeout { return rebalanceDrainTimeout.asWaitSetting }
        return min(effectiveDrainTimeout(for: registry), Self.defaultRebalanceDrainTimeoutLimit)
    }

    /// ``effectiveRebalanceDrainTimeout(for:)`` counting the configured workers' budgets only.
    public var effectiveRebalanceDrainTimeout: Duration {
        if let rebalanceDrainTimeout { return rebalanceDrainTimeout.asWaitSetting }
        return min(effectiveDrainTimeout, Self.defaultRebalanceDrainTimeoutLimit)
    }

    /// Checks the workers registered for this deployment (configured and Swift ones) against
    /// ``permittedTypes``, so that a wrong route is refused at startup, never found on the first record; and
    /// that every ``workerSettings`` section was read by a registered worker (``checkWorkerSettings(_:)``).
    /// - Throws: ``ConfigurationError`` naming the type or the section.
    public func checkRoutes(_ registry: WorkerRegistry) throws {
        try checkWorkerSettings(registry)
        guard let permittedTypes else { return }
        let permitted = Set(permittedTypes)
        if let stray = registry.types.first(where: { !permitted.contains($0) }) {
            throw ConfigurationError(.invalidValue, key: "permittedTypes",
                "a worker is registered for type '\(stray)', which is not in permittedTypes \(permittedTypes.sorted()); add it or remove the worker")
        }
        if let missing = permittedTypes.sorted().first(where: { !registry.types.contains($0) }) {
            throw ConfigurationError(.invalidValue, key: "permittedTypes",
                "type '\(missing)' is permitted but no worker is registered for it; declare one under workers or register a Swift worker")
        }
    }

    /// The bootstrap servers in effect.
    public var bootstrapServers: String { kafka["bootstrap.servers"] ?? "" }
}
