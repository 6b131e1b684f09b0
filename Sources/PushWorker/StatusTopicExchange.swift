import Foundation
import PushWorkerCore
import PushWorkerKafka
import Synchronization

/// Publishes this member's ``MemberStatus`` to the status topic every
/// ``StatusPageConfiguration/publishInterval`` and reads every member's snapshots back into the
/// ``StatusBoard``, so that each member's page shows the whole consumer group.
///
/// Its own small clients, apart from the pipeline's: a producer (fire and forget: a delivery failure only
/// shows on the page, and a member that cannot publish drops off the others' pages) and a reader consumer
/// (``KafkaConsumer/reader(configuration:logHandler:)``: no group, no commits) that starts each partition
/// of the status topic ``recentRecords`` records before its end and polls on a dedicated thread.
final class StatusTopicExchange: Sendable {
    /// How far back each status partition is read at start: 500 records. Older snapshots than
    /// ``StatusPageConfiguration/memberTimeout`` are ignored anyway.
    static let recentRecords: Int64 = 500
    /// How long the reader waits for the status topic's metadata and for each partition's watermarks: 1 s.
    static let requestTimeoutMs: Int32 = 1000

    private let board: StatusBoard
    private let settings: StatusPageConfiguration
    private let producerProperties: KafkaConfiguration
    private let readerProperties: KafkaConfiguration
    private let logger: PushWorkerLogger
    private let logHandler: KafkaLogHandler?
    private let stopped = Atomic<Bool>(false)

    /// Creates an exchange with the service's Kafka properties (`kafka` with `producer` for the producer,
    /// with `consumer` for the reader), without what belongs to the pipeline's clients only
    /// (`transactional.id`, `group.id`, `group.instance.id`, `statistics.interval.ms`).
    init(board: StatusBoard, configuration: ServiceConfiguration, logger: PushWorkerLogger, logHandler: KafkaLogHandler?) {
        self.board = board
        self.settings = configuration.statusPage
        var producer = configuration.kafka.merging(configuration.producer)
        var reader = configuration.kafka.merging(configuration.consumer)
        for name in ["transactional.id", "statistics.interval.ms"] { producer[name] = nil }
        for name in ["group.id", "group.instance.id", "statistics.interval.ms", "enable.auto.offset.store"] { reader[name] = nil }
        // A snapshot not delivered within a member timeout is stale: librdkafka gives up on it then.
        producer.setDefault("message.timeout.ms", String(max(1000, configuration.statusPage.memberTimeout.wholeMilliseconds)))
        self.producerProperties = producer
        self.readerProperties = reader
        self.logger = logger
        self.logHandler = logHandler
    }

    /// Publishes and reads until ``stop()`` (or until the task running it is cancelled).
    func run() async {
        async let reading: Void = readUntilStopped()
        await publishUntilStopped()
        await reading
    }

    /// Stops ``run()``: the publishing loop at its next wake-up (cancel its task to wake it now), the
    /// reader within 200 ms.
    func stop() { stopped.store(true, ordering: .releasing) }

    private var isStopped: Bool { stopped.load(ordering: .acquiring) }

    private func publishUntilStopped() async {
        let board = self.board
        let topic = settings.topic
        // Held here and dropped on a dedicated thread at the end: freeing the client (`rd_kafka_destroy`)
        // joins librdkafka's threads and must not block the cooperative pool.
        let holder = Mutex<KafkaProducer?>(nil)
        do {
            let producer = try KafkaProducer(configuration: producerProperties, logHandler: logHandler, onDelivery: { reports in
                if let failed = reports.first(where: { $0.error != nil }), let error = failed.error {
                    board.publishProblem("cannot write to the status topic \(topic): \(error.message)")
                } else {
                    board.publishProblem(nil)
                }
            })
            holder.withLock { $0 = producer }
        } catch {
            board.publishProblem("cannot create the status producer: \(error)")
            await waitUntilStopped()
            return
        }
        await publishLoop(holder)
        _ = try? await DedicatedThread.run(name: "pushworker-status-release") {
            let last = holder.withLock { producer in
                defer { producer = nil }
                return producer
            }
            _ = last  // dropped here, on this thread
        }
    }

    /// Publishes this member's snapshot every publish interval until stopped, then flushes (at most 1 s).
    private func publishLoop(_ holder: borrowing Mutex<KafkaProducer?>) async {
        guard let producer = holder.withLock({ $0 }) else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let key = Array(board.instanceId.utf8)
        let topic = settings.topic
        while !isStopped {
            do {
                let value = try encoder.encode(board.ownStatus())
                try producer.produce(KafkaOutgoingRecord(topic: topic, key: key, value: Array(value)), token: 0)
            } catch {
                board.publishProblem("cannot write to the status topic \(topic): \(error)")
            }
            do {
                try await Task.sleep(for: settings.publishInterval)
            } catch {
                break
            }
        }
        await producer.close(timeoutMs: 1000)
    }

    private func waitUntilStopped() async {
        while !isStopped {
            do { try await Task.sleep(for: settings.publishInterval) } catch { return }
        }
    }

    private func readUntilStopped() async {
        do {
            try await DedicatedThread.run(name: "pushworker-status-reader") { [self] in try self.readBlocking() }
        } catch {
            board.readProblem("cannot read the status topic \(settings.topic): \(error)")
            logger.warning("status topic reader stopped", metadata: ["topic": settings.topic, "error": "\(error)"])
        }
    }

    /// The reader's loop, on its dedicated thread: assign the status topic's partitions near their ends
    /// (again after a failure, once per publish interval), then poll.
    private func readBlocking() throws {
        let consumer = try KafkaConsumer.reader(configuration: readerProperties, logHandler: logHandler)
        defer { try? consumer.close() }
        let decoder = JSONDecoder()
        let topic = settings.topic
        var assigned = false
        var nextAttempt = ContinuousClock.now
        while !isStopped {
            if !assigned && ContinuousClock.now >= nextAttempt {
                do {
                    var offsets: [TopicPartitionOffset] = []
                    // Short waits, and none once stopped: a stop waits for this thread, also with the
                    // brokers down.
                    for partition in try consumer.partitions(of: topic, timeoutMs: Self.requestTimeoutMs) where !isStopped {
                        let (low, high) = try consumer.watermarks(partition, timeoutMs: Self.requestTimeoutMs)
                        offsets.append(TopicPartitionOffset(partition, offset: max(low, high - Self.recentRecords)))
                    }
                    if isStopped { break }
                    try consumer.assign(offsets)
                    assigned = true
                    board.readProblem(nil)
                } catch {
                    board.readProblem("cannot read the status topic \(topic): \(error); trying again every \(settings.publishInterval)")
                    nextAttempt = ContinuousClock.now.advanced(by: settings.publishInterval)
                }
            }
            // Also the wait between attempts while unassigned (nothing arrives then).
            guard let record = try consumer.poll(timeoutMs: 200), let value = record.value else { continue }
            // A record that is not a snapshot (another program writing to the topic) is skipped.
            guard let status = try? decoder.decode(MemberStatus.self, from: Data(value)) else { continue }
            board.received(status)
        }
    }
}
