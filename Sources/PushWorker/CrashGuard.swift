import PushWorkerCore
import PushWorkerKafka
import Synchronization

/// Keeps a record that kills the process from killing it forever (docs/guarantees.md, "A record that
/// crashes the process"): the driver of ``CrashGuardState``. Its markers are offsets with metadata
/// committed for a group of its own, `<groupId>.crash-guard`, by a consumer that never subscribes (so
/// the group has no members and the input group's commits never overwrite them).
///
/// Every method runs on the consumer's thread (the loop or its rebalance callback) and may block on a
/// commit or a read of the guard's group; the state's lock is never held across one.
final class CrashGuard: Sendable {
    private let state: Mutex<CrashGuardState>
    private let store: KafkaConsumer
    private let logger: PushWorkerLogger
    private let metrics: ServiceMetrics
    /// The `apns-id` (or the default message id) and the payload `type` of a record, for the logs.
    private let identify: @Sendable (InputRecord) -> (messageId: String, type: String?)
    /// The group the markers are committed for.
    let groupId: String

    /// The longest a read or a commit of markers waits: 10 s.
    static let timeoutMs: Int32 = 10_000

    /// The guard's group for an input group.
    static func groupId(for inputGroup: String) -> String { inputGroup + ".crash-guard" }

    /// Creates the guard with its own consumer (`properties`: the input consumer's, with the guard's
    /// group id set here).
    /// - Throws: ``KafkaError`` if the consumer cannot be created.
    init(settings: CrashGuardState.Settings, consumerProperties: KafkaConfiguration, inputGroup: String,
         logger: PushWorkerLogger, metrics: ServiceMetrics, logHandler: KafkaLogHandler?,
         identify: @escaping @Sendable (InputRecord) -> (messageId: String, type: String?)) throws {
        var properties = consumerProperties
        groupId = Self.groupId(for: inputGroup)
        properties["group.id"] = groupId
        properties["enable.auto.commit"] = "false"
        properties["group.instance.id"] = nil
        properties["statistics.interval.ms"] = nil
        store = try KafkaConsumer(configuration: properties, logHandler: logHandler)
        state = Mutex(CrashGuardState(settings: settings))
        self.logger = logger
        self.metrics = metrics
        self.identify = identify
    }

    /// Whether any partition runs its records one at a time now.
    var isolating: Bool { state.withLock { $0.isolatingCount > 0 } }

    /// Isolating partitions holding so many records that they stay paused
    /// (``CrashGuardState/holdingPartitions()``).
    func holding() -> Set<TopicPartition> { state.withLock { $0.holdingPartitions() } }

    /// Reads the markers of newly assigned partitions (blocking) and sets how each runs. A partition whose
    /// markers cannot be read runs as usual, with a warning.
    func assigned(_ partitions: [TopicPartition]) {
        var markers: [TopicPartition: CrashGuardMarker?] = [:]
        do {
            for committed in try store.committedOffsetsAndMetadata(partitions, timeoutMs: Self.timeoutMs) {
                markers[committed.topicPartition] = CrashGuardMarker(bytes: committed.metadata)
            }
        } catch {
            logger.warning("crash guard: the markers of the assigned partitions could not be read; they run unguarded until their next assignment",
                           metadata: ["partitions": partitions.map(\.description).joined(separator: ","), "group": groupId, "error": "\(error)"])
        }
        for tp in partitions where markers[tp] == nil { markers[tp] = .some(nil) }
        let findings = state.withLock { $0.assigned(markers) }
        let limit = state.withLock { $0.settings.deathLimit }
        for finding in findings {
            var metadata: [String: String] = ["topic": finding.partition.topic, "partition": String(finding.partition.partition), "lease": String(finding.until)]
            if let offset = finding.suspectOffset {
                metadata["offset"] = String(offset)
                metadata["deaths"] = String(finding.deaths)
                metadata["deathLimit"] = String(limit)
            }
            logger.warning(finding.suspectOffset == nil
                ? "crash guard: the partition's last owner did not leave it clean (it died, lost the group, or stopped while it still ran records alone after a death); its records below the lease run one at a time, so that a record that kills the process is found"
                : "crash guard: the partition's last owner died while it ran one of its records alone; its records below the lease run one at a time",
                metadata: metadata)
        }
    }

    /// One round: what goes to the dispatcher now, after the markers it needs are committed. A commit that
    /// fails is counted and logged; the records go on unguarded rather than wait.
    func round(_ records: [InputRecord], outstanding: @autoclosure () -> [TopicPartition: Int]) -> CrashGuardState.Round {
        let isolating = state.withLock { $0.isolatingCount > 0 }
        let counts = isolating ? outstanding() : [:]
        let round = state.withLock { $0.round(records, outstanding: counts) }
        write(round.writes, context: "before records run")
        if !round.isolationEnded.isEmpty {
            logger.info("crash guard: the records run alone are done (past the dead owner's lease, or leaseRecords of them); the partition's records run concurrently again",
                        metadata: ["partitions": round.isolationEnded.map(\.description).sorted().joined(separator: ",")])
        }
        if round.isolated > 0 { metrics.crashIsolatedRecords.increment(by: Double(round.isolated)) }
        for (record, deaths) in round.suspects { died(record, deaths: deaths, condemned: false) }
        for (record, deaths) in round.condemned { died(record, deaths: deaths, condemned: true) }
        return round
    }

    /// Says at error that a process died with `record` running (found by its marker), naming the record.
    private func died(_ record: InputRecord, deaths: Int, condemned: Bool) {
        metrics.crashDeathsFound.increment()
        let (messageId, type) = identify(record)
        let limit = state.withLock { $0.settings.deathLimit }
        logger.error(condemned
            ? "crash guard: a pushworker process died with this record running as many times as the limit; it is not run again: failed / workerCrashed"
            : "crash guard: a pushworker process died with this record running; it runs again, alone",
            metadata: ["topic": record.source.topic, "partition": String(record.source.partition), "offset": String(record.source.offset),
                       "messageId": messageId, "type": type ?? "(none)", "deaths": String(deaths), "deathLimit": String(limit)])
    }

    /// Partitions given up cleanly (drained or cut short, the process alive): their markers say so.
    func revoked(_ partitions: [TopicPartition], outstanding: [TopicPartition: Int]) {
        let writes = state.withLock { $0.revoked(partitions, outstanding: outstanding) }
        write(writes, context: "at the revocation")
    }

    /// Partitions lost: forgotten; their next owner treats them as left uncleanly.
    func lost(_ partitions: [TopicPartition]) { state.withLock { $0.lost(partitions) } }

    /// Partitions rewound after an aborted transaction.
    func rewound(_ partitions: [TopicPartition]) { state.withLock { $0.rewound(partitions) } }

    private func write(_ markers: [OffsetAndMetadata], context: String) {
        guard !markers.isEmpty else { return }
        let started = ContinuousClock.now
        do {
            try store.commit(offsetsAndMetadata: markers)
            logger.debug("crash guard: markers committed", metadata: [
                "count": String(markers.count), "ms": String((ContinuousClock.now - started) / .milliseconds(1)), "context": context,
            ])
        } catch {
            metrics.crashGuardWriteFailures.increment(by: Double(markers.count))
            logger.warning("crash guard: markers could not be committed \(context); a death now may not be found", metadata: [
                "partitions": markers.map(\.topicPartition.description).sorted().joined(separator: ","), "group": groupId, "error": "\(error)",
            ])
        }
        // Serves the guard's consumer (errors, logs); it never subscribes, so it returns no record.
        _ = try? store.poll(timeoutMs: 0)
    }

    /// Closes the guard's consumer.
    func close() { try? store.close() }
}
