import Foundation
import PushWorkerCore
import PushWorkerKafka
import PushWorker
import Synchronization

/// `pushworker redrive`: sends dead letters back to the input topic they came from, once each.
struct RedriveCommand {
    static let help = """
    Usage: pushworker redrive [--config FILE] [--bootstrap-servers HOSTS] [--topic T] [--to TOPIC]
                              [--group G] [--count N] [--timeout SECONDS] [--dry-run]

    Sends the records of the dead-letter topic back to the input topic each came from (its
    pushworker-source-topic header), with their key, value and headers, so that they run again once the
    cause of their failure is fixed. The pushworker-attempts header rides along: the next run reports
    attempt N + 1 in its result. Only dead letters written before the command started are sent (one that
    fails again is dead-lettered again and waits for the next redrive, never loops). Progress is committed
    as consumer group G, so each dead letter is sent back once, however often the command runs; run one
    redrive per group at a time. Prints how many were sent back, by topic. Stub dead letters (written in
    place of a dead letter too large to produce: a pushworker-dropped-because header, no value) are
    skipped and counted: look their originals up by their pushworker-source-* headers.

    Options:
      --config FILE               JSON5 configuration: Kafka properties (security included), the
                                  dead-letter topic and the group id (default: $PUSHWORKER_CONFIG, else
                                  built-in defaults)
      -b, --bootstrap-servers HOSTS   Kafka brokers (also --bootstrap-server; overrides the file and
                                  $PUSHWORKER_BOOTSTRAP_SERVERS; without them and without --config,
                                  the address a running 'pushworker dev' leaves in its bootstrap file)
      --topic T                   the dead-letter topic (default: deadLetter.topic of the configuration)
      --to TOPIC                  send every dead letter to TOPIC instead of its source topic (also
                                  records without a pushworker-source-topic header, which otherwise
                                  stop the run)
      --group G                   the consumer group that remembers progress (default: <groupId>-redrive)
      --count N                   send back at most N dead letters
      --timeout SECONDS           give up waiting for the broker after this long without a record (default 10)
      --dry-run                   print each dead letter as one JSON line (deadLetter, source, messageId,
                                  reason, detail, worker, attempts, failedAt, droppedBecause and
                                  droppedValueBytes (stubs), key, value, headers); send
                                  back and commit nothing
    """

    /// Dead letters read before they are sent back and their offsets committed.
    static let batchSize = 500

    func execute(_ arguments: [String]) async throws {
        var parser = ArgumentParser(command: "redrive", options: [
            .init(name: "config", takesValue: true), .bootstrapServers,
            .init(name: "topic", takesValue: true), .init(name: "to", takesValue: true),
            .init(name: "group", takesValue: true), .init(name: "count", takesValue: true),
            .init(name: "timeout", takesValue: true), .init(name: "dry-run", takesValue: false),
        ])
        try parser.parse(arguments)
        if parser.has("help") { Output.line(Self.help); return }
        let count = try parser.int("count", in: 1...Int.max) ?? .max
        let timeout = try parser.double("timeout", in: 0.1...86_400) ?? 10
        let dryRun = parser.has("dry-run")
        let (loaded, source) = try PushWorkerCommandLine.loadConfiguration(path: parser.value("config"), bootstrapServers: parser.value("bootstrap-servers"))
        var configuration = loaded
        // A configuration file's brokers (or PUSHWORKER_KAFKA_BOOTSTRAP_SERVERS) win over a running dev's
        // address; the built-in default localhost:9092 does not.
        let environment = ProcessInfo.processInfo.environment
        let configured = source != "built-in defaults" || environment["PUSHWORKER_KAFKA_BOOTSTRAP_SERVERS"]?.isEmpty == false
            ? configuration.kafka["bootstrap.servers"] : nil
        let address = (try? BrokerAddress.resolve(flag: parser.value("bootstrap-servers"), command: "redrive", configured: configured))
            ?? BrokerAddress(servers: configuration.kafka["bootstrap.servers"] ?? "localhost:9092", origin: "the built-in default")
        configuration.kafka["bootstrap.servers"] = address.servers
        PushWorkerLogger.bootstrap(level: configuration.logLevel, format: configuration.logFormat)
        for option in ["topic", "to", "group"] where parser.value(option)?.isEmpty == true {
            throw CommandLineError(.usage, "pushworker redrive: --\(option) needs a non-empty value")
        }
        guard let topic = parser.value("topic") ?? configuration.deadLetter?.topic else {
            throw CommandLineError(.usage, "pushworker redrive: no dead-letter topic; pass --topic T, or --config FILE with deadLetter.topic set (dev's config/pushworker.json5 has push-dead-letters)")
        }
        // Topics that hold no dead letters, or must not receive records sent back (the configuration's, or
        // the defaults without one).
        if topic == configuration.resultsTopic || configuration.inputTopics.contains(topic) {
            throw CommandLineError(.usage, "pushworker redrive: --topic \(topic) is the \(topic == configuration.resultsTopic ? "results" : "input") topic, not a dead-letter topic")
        }
        let target = parser.value("to")
        if target == topic {
            throw CommandLineError(.usage, "pushworker redrive: --to names the dead-letter topic itself; records would loop")
        }
        if target == configuration.resultsTopic {
            throw CommandLineError(.usage, "pushworker redrive: --to \(configuration.resultsTopic) is the results topic; send dead letters back to an input topic")
        }
        try await address.check(command: "redrive", properties: configuration.kafka, timeout: .milliseconds(Int64(min(timeout, 10) * 1000)))
        let group = parser.value("group") ?? "\(configuration.groupId)-redrive"
        var consumerProperties = configuration.kafka.merging(configuration.consumer)
        consumerProperties["group.id"] = group
        consumerProperties["enable.auto.commit"] = "false"
        consumerProperties["enable.auto.offset.store"] = "false"
        let kafkaLog = PushWorkerLogger(label: "pushworker.redrive").kafkaLogHandler
        let consumer = try KafkaConsumer(configuration: consumerProperties, logHandler: kafkaLog)
        let reports = DeliveryReports()
        let producer = dryRun ? nil : try KafkaProducer(configuration: configuration.nonTransactionalProducerProperties, logHandler: kafkaLog, onDelivery: reports.add)
        let timeoutMs = Int32(timeout * 1000)

        // The range to send back, fixed now: from the group's committed offset (else the log's start) to
        // the end of each partition. Partitions are assigned directly: no group join, no rebalance wait.
        let range: (ends: [TopicPartition: Int64], waiting: Int64, fresh: Bool)
        do {
            range = try await DedicatedThread.run(name: "pushworker-redrive") { () throws -> ([TopicPartition: Int64], Int64, Bool) in
                let partitions = try consumer.partitions(of: topic, timeoutMs: timeoutMs)
                let committed = Dictionary(uniqueKeysWithValues: try consumer.committed(partitions, timeoutMs: timeoutMs).map { ($0.topicPartition, $0.offset) })
                var starts: [TopicPartitionOffset] = []
                var ends: [TopicPartition: Int64] = [:]
                var waiting: Int64 = 0
                for tp in partitions {
                    let (low, high) = try consumer.watermarks(tp, timeoutMs: timeoutMs)
                    let start = max(committed[tp].flatMap { $0 >= 0 ? $0 : nil } ?? low, low)
                    guard start < high else { continue }
                    starts.append(TopicPartitionOffset(tp, offset: start))
                    ends[tp] = high
                    waiting += high - start
                }
                try consumer.assign(starts)
                return (ends, waiting, committed.values.allSatisfy { $0 < 0 })
            }
        } catch let error as KafkaError {
            throw CommandLineError(.failure, "pushworker redrive: cannot read the dead-letter topic \(topic) (\(error.message)); check the brokers (--bootstrap-servers, --config) and the topic name")
        }
        var ends = range.ends
        PushWorkerLogger(label: "pushworker.redrive").info(dryRun ? "listing dead letters" : "sending dead letters back", metadata: [
            "topic": topic, "group": group, "waiting": String(range.waiting),
            "from": range.fresh ? "the beginning (nothing committed yet for this group)" : "the group's committed offsets",
        ])

        let stop = StopFlag()
        let watcher = SignalWatcher { stop.set() }
        defer { withExtendedLifetime(watcher) {} }
        var sentByTopic: [String: Int] = [:]
        var total = 0
        var stubs = 0
        var failure: KafkaError?
        while !stop.isSet, failure == nil, total < count, !ends.isEmpty {
            let limit = min(Self.batchSize, count - total)
            let waiting = ends
            let (batch, finished) = try await DedicatedThread.run(name: "pushworker-redrive") {
                try Self.poll(consumer, limit: limit, before: waiting, timeout: .milliseconds(Int64(timeoutMs)), stop: stop)
            }
            finished.forEach { ends[$0] = nil }
            if dryRun {
                batch.forEach { Output.line(Self.describe($0)) }
                total += batch.count
                continue
            }
            guard let producer, !batch.isEmpty else { continue }
            let (next, sent, skipped, error) = await Self.send(batch, to: target, with: producer, reports: reports)
            failure = error
            stubs += skipped
            total += sent.values.reduce(0, +)
            sentByTopic.merge(sent, uniquingKeysWith: +)
            let offsets = next.map { TopicPartitionOffset($0.key, offset: $0.value) }
            try await DedicatedThread.run(name: "pushworker-redrive-commit") {
                consumer.storeOffsets(offsets)
                try consumer.commit()
            }
        }
        _ = await producer?.close()
        try? await DedicatedThread.run(name: "pushworker-redrive-close") { try consumer.close() }
        if !dryRun {
            let byTopic = sentByTopic.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            Output.line("redriven \(total) dead letter(s) from \(topic)" + (byTopic.isEmpty ? "" : ": \(byTopic)")
                + (stubs == 0 ? "" : "; skipped \(stubs) stub(s) without a value (their records were too large to keep: look them up by their pushworker-source-topic, -partition and -offset headers)"))
        }
        if let failure {
            throw CommandLineError(.failure, "pushworker redrive: a dead letter could not be sent back (\(failure.message)); it and the ones after it in its partition stay in \(topic) for the next run")
        }
    }

    /// Polls up to `limit` records below the end offsets `ends`; returns what it has once a poll comes back
    /// empty, or once every partition reached its end, with the partitions that reached it.
    /// - Throws: ``KafkaError/Code/timedOut`` if nothing arrives for `timeout` while records are expected.
    private static func poll(_ consumer: KafkaConsumer, limit: Int, before ends: [TopicPartition: Int64], timeout: Duration, stop: StopFlag) throws
        -> (records: [KafkaRecord], finished: [TopicPartition]) {
        var records: [KafkaRecord] = []
        var finished: [TopicPartition] = []
        var open = ends
        var lastRecord = ContinuousClock.now
        while records.count < limit, !open.isEmpty, !stop.isSet {
            guard let record = try consumer.poll(timeoutMs: records.isEmpty ? 100 : 0) else {
                if !records.isEmpty { break }
                if lastRecord.duration(to: .now) >= timeout {
                    throw KafkaError(.timedOut, "no dead letter arrived within \(timeout) although \(open.count) partition(s) have more before the redrive's end")
                }
                continue
            }
            lastRecord = ContinuousClock.now
            let tp = record.topicPartition
            guard let end = open[tp] else { continue }
            // A record at or past the end (written after the start) also ends the partition, should the
            // log have a gap just before the end.
            if record.offset < end { records.append(record) }
            if record.offset + 1 >= end {
                open[tp] = nil
                finished.append(tp)
            }
        }
        return (records, finished)
    }

    /// Sends `batch` back, every record in flight at once but enqueued one after another in dead-letter
    /// order, so that records of one key reach their input partition in the order they failed (the order
    /// their key's records run in; sends from concurrent tasks would enqueue in any order). Returns, per
    /// partition, the offset to commit (one past the last record sent before the partition's first
    /// failure), the records sent by target topic, the stubs skipped, and the first failure.
    ///
    /// A stub dead letter (``isStub(_:)``) is not sent: it has no value to run again. It is skipped (its
    /// offset is committed past), logged and counted.
    private static func send(_ batch: [KafkaRecord], to target: String?, with producer: KafkaProducer, reports: DeliveryReports) async
        -> (next: [TopicPartition: Int64], sent: [String: Int], skipped: Int, failure: KafkaError?) {
        var outcomes = [Result<KafkaDeliveryReport, KafkaError>?](repeating: nil, count: batch.count)
        var stubs: Set<Int> = []
        var tokens: [UInt64: Int] = [:]
        // Partitions with a record that could not be enqueued: the rest of them wait for the next run, behind it.
        var refused: Set<TopicPartition> = []
        for (index, record) in batch.enumerated() where !refused.contains(record.topicPartition) {
            if isStub(record) {
                stubs.insert(index)
                let header = { (name: String) in record.headers.first { $0.name == name }?.value.map { String(decoding: $0, as: UTF8.self) } ?? "" }
                PushWorkerLogger(label: "pushworker.redrive").warning("skipping a stub dead letter: its record was too large to keep, nothing to send back", metadata: [
                    "deadLetter": "\(record.topicPartition)@\(record.offset)", "sourceTopic": header(DeadLetterRecord.Header.sourceTopic),
                    "sourcePartition": header(DeadLetterRecord.Header.sourcePartition), "sourceOffset": header(DeadLetterRecord.Header.sourceOffset),
                    "droppedBecause": header(DeadLetterRecord.Header.droppedBecause),
                ])
                continue
            }
            guard let outgoing = redriven(record, to: target) else {
                let position = "\(record.topicPartition)@\(record.offset)"
                outcomes[index] = .failure(KafkaError(.deliveryFailed, "the dead letter at \(position) has no \(DeadLetterRecord.Header.sourceTopic) header; pass --to TOPIC"))
                refused.insert(record.topicPartition)
                continue
            }
            let token = reports.nextToken()
            while true {
                do throws(KafkaError) {
                    try producer.produce(outgoing, token: token)
                    tokens[token] = index
                    break
                } catch where error.code == .queueFull {
                    // The same record again once deliveries make room: the order stays.
                    try? await Task.sleep(for: .milliseconds(5))
                } catch {
                    outcomes[index] = .failure(error)
                    refused.insert(record.topicPartition)
                    break
                }
            }
        }
        // librdkafka reports every enqueued record, delivered or failed, within message.timeout.ms.
        var waiting = Set(tokens.keys)
        while !waiting.isEmpty {
            for report in reports.take(waiting) {
                waiting.remove(report.token)
                if let index = tokens[report.token] { outcomes[index] = report.error.map { .failure($0) } ?? .success(report) }
            }
            if !waiting.isEmpty { try? await Task.sleep(for: .milliseconds(5)) }
        }
        var next: [TopicPartition: Int64] = [:]
        var sent: [String: Int] = [:]
        var stopped: Set<TopicPartition> = []
        var failure: KafkaError?
        for (index, (record, outcome)) in zip(batch, outcomes).enumerated() where !stopped.contains(record.topicPartition) {
            if stubs.contains(index) {
                next[record.topicPartition] = record.offset + 1
                continue
            }
            switch outcome ?? .failure(KafkaError(.deliveryFailed, "no report")) {
            case .success(let delivery):
                next[record.topicPartition] = record.offset + 1
                sent[delivery.topicPartition.topic, default: 0] += 1
            case .failure(let error):
                failure = failure ?? error
                stopped.insert(record.topicPartition)
            }
        }
        return (next, sent, stubs.count, failure)
    }

    /// Whether `record` is a stub dead letter (``DeadLetterRecord/stub(of:dropKey:error:)``): it has a
    /// `pushworker-dropped-because` header.
    static func isStub(_ record: KafkaRecord) -> Bool {
        record.headers.contains { $0.name == DeadLetterRecord.Header.droppedBecause }
    }

    /// The delivery reports of the records ``send(_:to:with:reports:)`` produced, by token.
    final class DeliveryReports: Sendable {
        private let state = Mutex<(nextToken: UInt64, reports: [UInt64: KafkaDeliveryReport])>((1, [:]))

        func nextToken() -> UInt64 {
            state.withLock { state in
                defer { state.nextToken += 1 }
                return state.nextToken
            }
        }

        /// Called on the producer's poll thread.
        func add(_ batch: [KafkaDeliveryReport]) {
            state.withLock { state in for report in batch { state.reports[report.token] = report } }
        }

        /// Removes and returns the reports that arrived for `tokens`.
        func take(_ tokens: Set<UInt64>) -> [KafkaDeliveryReport] {
            state.withLock { state in tokens.compactMap { state.reports.removeValue(forKey: $0) } }
        }
    }

    /// The record sent back for dead letter `record`: to `target`, else to its source topic, with its
    /// key, value and headers, minus the failure headers pushworker added (`pushworker-attempts` stays).
    /// `nil` when there is no `target` and the record has no non-empty source-topic header.
    static func redriven(_ record: KafkaRecord, to target: String?) -> KafkaOutgoingRecord? {
        let source = record.headers.first { $0.name == DeadLetterRecord.Header.sourceTopic }?.value.map { String(decoding: $0, as: UTF8.self) }
        guard let topic = target ?? source, !topic.isEmpty else { return nil }
        let headers = record.headers.filter { !$0.name.hasPrefix(DeadLetterRecord.headerPrefix) || $0.name == Job.attemptsHeader }
        return KafkaOutgoingRecord(topic: topic, key: record.key, value: record.value, headers: headers)
    }

    /// One JSON line describing a dead letter (`--dry-run`).
    static func describe(_ record: KafkaRecord) -> String {
        typealias Name = DeadLetterRecord.Header
        func header(_ name: String) -> JSONValue {
            guard let value = record.headers.first(where: { $0.name == name })?.value else { return .null }
            return .string(String(decoding: value, as: UTF8.self))
        }
        func number(_ name: String) -> JSONValue {
            guard let text = header(name).stringValue, let value = Int64(text) else { return header(name) }
            return .int(value)
        }
        func text(_ bytes: [UInt8]?) -> JSONValue {
            guard let bytes else { return .null }
            return .string(String(validating: bytes, as: UTF8.self) ?? "base64:" + Data(bytes).base64EncodedString())
        }
        // The record's own headers (apns-id, traceparent, …) as [name, value] pairs in order.
        let headers = record.headers.filter { !$0.name.hasPrefix(DeadLetterRecord.headerPrefix) }.map { header in
            JSONValue.array([.string(header.name), text(header.value)])
        }
        let object: JSONValue = .object([
            "deadLetter": .object([
                "topic": .string(record.topicPartition.topic), "partition": .int(Int64(record.topicPartition.partition)),
                "offset": .int(record.offset),
            ]),
            "source": .object([
                "topic": header(Name.sourceTopic), "partition": number(Name.sourcePartition), "offset": number(Name.sourceOffset),
            ]),
            "messageId": header(Name.messageId), "reason": header(Name.reason), "detail": header(Name.detail),
            "worker": header(Name.worker), "attempts": number(Name.attempts), "failedAt": header(Name.failedAt),
            // Set on a stub (a dead letter too large to produce, replaced without its value): librdkafka's error.
            "droppedBecause": header(Name.droppedBecause), "droppedValueBytes": number(Name.droppedValueBytes),
            "key": text(record.key), "value": text(record.value), "headers": .array(headers),
        ])
        return Output.json(object)
    }
}
