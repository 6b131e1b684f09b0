import Foundation
import PushWorkerCore
import PushWorkerKafka
import Synchronization

/// Reads a results topic from the beginning of every partition, on a thread of its own, and notes each
/// result's `messageId` in a ``ResultLedger``: the ledger of what the broker really holds, whichever
/// process (or member of the group) produced it.
///
/// ```swift
/// let tail = try ResultsTopicTail(servers: cluster.bootstrapServers, topic: resultsTopic, inputs: ids)
/// defer { tail.stop() }
/// // … run the service, inject faults …
/// #expect(await tail.waitUntil(timeout: .seconds(60)) { $0.lost.isEmpty })
/// ```
/// Call ``stop()`` when done: the reading thread holds the tail until then.
public final class ResultsTopicTail: Sendable {
    private struct State {
        var ledger = ResultLedger()
        /// The next offset to read, per results partition.
        var next: [TopicPartition: Int64] = [:]
        /// The input offsets that have a result (the results' `source`), per input partition.
        var answered: [TopicPartition: Set<Int64>] = [:]
        /// The first 20 places where the reader skipped offsets: a record read at another offset than the
        /// next one expected. Without transactions a partition's offsets are contiguous; a transaction's
        /// commit marker (a control record, never delivered) also leaves one offset out.
        var gaps: [String] = []
    }

    private let state = Mutex(State())
    private let consumer: KafkaConsumer
    private let partitions: [TopicPartition]
    private let stopped = Atomic<Bool>(false)
    private let readerWarnings: ReaderWarnings

    /// Starts reading `topic` of the cluster at `servers` (`bootstrap.servers`); `inputs` are the ids
    /// produced (each input's `apns-id`, its result's `messageId`). With `finalResultsOnly`, a result with
    /// `willRetry: true` (an attempt that another follows) is not noted in the ledger: with retries an input
    /// has one final result, and a duplicate is a second final one. Its input position still counts as
    /// answered (its offset is committed once that result and the retry's copy are acknowledged).
    /// - Throws: ``KafkaError`` if the reader cannot start or the topic's partitions cannot be read in 10 s.
    public init(servers: String, topic: String, inputs: [String], finalResultsOnly: Bool = false) throws {
        let warnings = ReaderWarnings()
        consumer = try KafkaConsumer.reader(configuration: KafkaConfiguration(["bootstrap.servers": servers, "fetch.wait.max.ms": "20"]), logHandler: { message in
            guard message.severity <= 4 else { return }
            warnings.list.withLock { if $0.count < 20 { $0.append("\(message.facility): \(message.message)") } }
        })
        readerWarnings = warnings
        partitions = try consumer.partitions(of: topic, timeoutMs: 10_000)
        try consumer.assign(partitions.map { TopicPartitionOffset($0, offset: KafkaConsumer.offsetBeginning) })
        state.withLock { state in inputs.forEach { state.ledger.produced($0) } }
        let thread = Thread { [self] in
            while !stopped.load(ordering: .acquiring) {
                guard let record = try? consumer.poll(timeoutMs: 100) else { continue }
                let object = record.value.flatMap { try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }
                let id = object?["messageId"] as? String ?? "(unreadable result at \(record.topicPartition) offset \(record.offset))"
                let source = object?["source"] as? [String: Any]
                let input = (source?["topic"] as? String).flatMap { topic in
                    (source?["partition"] as? Int).flatMap { partition in
                        (source?["offset"] as? Int).map { (TopicPartition(topic: topic, partition: Int32(partition)), Int64($0)) }
                    }
                }
                let willRetry = object?["willRetry"] as? Bool ?? false
                state.withLock { state in
                    if !(finalResultsOnly && willRetry) { state.ledger.sawResult(id) }
                    let expected = state.next[record.topicPartition] ?? 0
                    if record.offset != expected && state.gaps.count < 20 {
                        state.gaps.append("\(record.topicPartition): expected offset \(expected), read \(record.offset)")
                    }
                    state.next[record.topicPartition] = record.offset + 1
                    if let input { state.answered[input.0, default: []].insert(input.1) }
                }
            }
        }
        thread.name = "results-tail"
        thread.start()
    }

    /// The ledger so far.
    public var ledger: ResultLedger { state.withLock { $0.ledger } }

    /// Where the reader found a partition's offsets not contiguous (each "`topic[p]`: expected offset N,
    /// read M"; in the exactly-once mode each transaction's commit marker adds one), and the reader's first
    /// 20 librdkafka warnings and errors: without transactions, empty when it read every record.
    public var readingProblems: [String] {
        state.withLock { $0.gaps } + readerWarnings.list.withLock { $0 }
    }

    /// Charges the duplicates read from now on to a new crash (``ResultLedger/crashed()``).
    public func crashed() { state.withLock { $0.ledger.crashed() } }

    /// The input positions below `committed` (the next offset to read, per input partition) that have no
    /// result: inputs committed without a result, which at-least-once never allows.
    public func unanswered(below committed: [TopicPartitionOffset]) -> [TopicPartitionOffset] {
        let answered = state.withLock { $0.answered }
        return committed.flatMap { entry in
            (0..<max(0, entry.offset)).filter { answered[entry.topicPartition]?.contains($0) != true }.map { TopicPartitionOffset(entry.topicPartition, offset: $0) }
        }
    }

    /// Waits, polling every 20 ms, until `condition` holds for the ledger.
    /// - Returns: whether it held within `timeout`.
    public func waitUntil(timeout: Duration, _ condition: (ResultLedger) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while !condition(ledger) {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// Waits until every record on the topic now has been read (each partition's high watermark, asked of
    /// the broker now).
    /// - Returns: whether it was read within `timeout`.
    /// - Throws: ``KafkaError`` if the watermarks cannot be read within 10 s.
    public func waitUntilCaughtUp(timeout: Duration) async throws -> Bool {
        let consumer = consumer
        let partitions = partitions
        let highs = try await DedicatedThread.run(name: "results-watermarks") {
            try partitions.map { ($0, try consumer.watermarks($0, timeoutMs: 10_000).high) }
        }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let next = state.withLock { $0.next }
            if highs.allSatisfy({ tp, high in high <= 0 || (next[tp] ?? 0) >= high }) { return true }
            if ContinuousClock.now >= deadline { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Stops the reading thread; it holds this tail (and so the consumer) until its poll returns, so the
    /// consumer is freed on that thread, never during a poll and never on the cooperative pool.
    public func stop() {
        stopped.store(true, ordering: .releasing)
        consumer.wakeUp()
    }
}

/// The reader's first 20 librdkafka warnings and errors (severity ≤ 4), shared by its log handler and the tail.
private final class ReaderWarnings: Sendable {
    let list = Mutex<[String]>([])
}
