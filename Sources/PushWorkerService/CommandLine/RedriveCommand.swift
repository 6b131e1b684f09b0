import Foundation
import PushWorkerCore
import PushWorkerKafka

/// `pushworker redrive`: sends dead letters back to the input topic they came from, once each.
struct RedriveCommand {
    static let help = """
    Usage: pushworker redrive [--config FILE] [--bootstrap-servers HOSTS] [--topic T] [--to TOPIC]
                              [--group G] [--count N] [--timeout SECONDS] [--dry-run]

    Sends the records of the dead-letter topic back to the input topic each came from (its
    pushworker-source-topic header), with their key, value and headers, so that they run again once the
    cause of their failure is fixed. The pushworker-attempts header rides along: the next run reports
    attempt N + 1 in its result. Progress is committed in consumer group G, so each dead letter is sent
    back once, however often the command runs. Stops when no dead letter arrives for --timeout seconds,
    or after --count; then prints how many were sent back, by topic.

    Options:
      --config FILE               JSON5 configuration: Kafka properties (security included), the
                                  dead-letter topic and the group id (default: $PUSHWORKER_CONFIG, else
                                  built-in defaults)
      --bootstrap-servers HOSTS   Kafka brokers (overrides the file and $PUSHWORKER_BOOTSTRAP_SERVERS)
      --topic T                   the dead-letter topic (default: deadLetter.topic of the configuration)
      --to TOPIC                  send every dead letter to TOPIC instead of its source topic
      --group G                   the consumer group that remembers progress (default: <groupId>-redrive)
      --count N                   send back at most N dead letters
      --timeout SECONDS           stop after this long without a new dead letter (default 5)
      --dry-run                   print each dead letter as one JSON line (source, reason, detail,
                                  attempts, failedAt, key, value) and send back or commit nothing
    """

    /// Dead letters polled before they are sent back and their offsets committed.
    static let batchSize = 500

    func execute(_ arguments: [String]) async throws {
        var parser = ArgumentParser(command: "redrive", options: [
            .init(name: "config", takesValue: true), .init(name: "bootstrap-servers", takesValue: true),
            .init(name: "topic", takesValue: true), .init(name: "to", takesValue: true),
            .init(name: "group", takesValue: true), .init(name: "count", takesValue: true),
            .init(name: "timeout", takesValue: true), .init(name: "dry-run", takesValue: false),
        ])
        try parser.parse(arguments)
        if parser.has("help") { Output.line(Self.help); return }
        let count = try parser.int("count", in: 1...Int.max)
        let idleTimeout = try parser.double("timeout", in: 0...86_400) ?? 5
        let dryRun = parser.has("dry-run")
        let (configuration, _) = try PushWorkerCommandLine.loadConfiguration(path: parser.value("config"), bootstrapServers: parser.value("bootstrap-servers"))
        Logger.bootstrap(level: configuration.logLevel, format: configuration.logFormat)
        guard let topic = parser.value("topic") ?? configuration.deadLetter?.topic else {
            throw CommandLineError(.usage, "pushworker redrive: no dead-letter topic; pass --topic T or set deadLetter.topic in the configuration")
        }
        let target = parser.value("to")
        if let target, target == topic {
            throw CommandLineError(.usage, "pushworker redrive: --to names the dead-letter topic itself; records would loop")
        }
        var consumerProperties = configuration.kafka.merging(configuration.consumer)
        consumerProperties["group.id"] = parser.value("group") ?? "\(configuration.groupId)-redrive"
        consumerProperties["enable.auto.commit"] = "false"
        consumerProperties["enable.auto.offset.store"] = "false"
        consumerProperties.setDefault("auto.offset.reset", "earliest")
        let kafkaLog = Logger(label: "pushworker.redrive").kafkaLogHandler
        let consumer = try KafkaConsumer(configuration: consumerProperties, logHandler: kafkaLog)
        let producer = dryRun ? nil : try KafkaProducer(configuration: configuration.producerProperties, logHandler: kafkaLog)
        try consumer.subscribe([topic])

        let stop = StopFlag()
        let watcher = SignalWatcher { stop.set() }
        defer { withExtendedLifetime(watcher) {} }
        var sentByTopic: [String: Int] = [:]
        var total = 0
        var failure: KafkaError?
        while !stop.isSet, failure == nil, total < (count ?? .max) {
            let limit = min(Self.batchSize, (count ?? .max) - total)
            let batch = try await DedicatedThread.run(name: "pushworker-redrive") { () throws -> [KafkaRecord] in
                try Self.poll(consumer, limit: limit, idleTimeout: idleTimeout, stop: stop)
            }
            if batch.isEmpty { break }
            if dryRun {
                batch.forEach { Output.line(Self.describe($0)) }
                total += batch.count
                continue
            }
            guard let producer else { break }
            // Every record of the batch in flight at once; each partition commits up to its first failure.
            let reports = await withTaskGroup(of: (Int, Result<KafkaDeliveryReport, KafkaError>).self) { group in
                for (index, record) in batch.enumerated() {
                    guard let outgoing = Self.redriven(record, to: target) else {
                        let position = "\(record.topicPartition)@\(record.offset)"
                        group.addTask { (index, .failure(KafkaError(.deliveryFailed, "the dead letter at \(position) has no \(DeadLetterRecord.sourceTopicHeader) header; pass --to TOPIC"))) }
                        continue
                    }
                    group.addTask {
                        do {
                            return (index, .success(try await producer.send(outgoing)))
                        } catch let error as KafkaError {
                            return (index, .failure(error))
                        } catch {
                            return (index, .failure(KafkaError(.deliveryFailed, "\(error)")))
                        }
                    }
                }
                var reports = [Result<KafkaDeliveryReport, KafkaError>?](repeating: nil, count: batch.count)
                for await (index, report) in group { reports[index] = report }
                return reports
            }
            var next: [TopicPartition: Int64] = [:]
            var stopped: Set<TopicPartition> = []
            for (record, report) in zip(batch, reports) {
                let tp = record.topicPartition
                guard !stopped.contains(tp) else { continue }
                switch report {
                case .some(.success(let delivery)) where delivery.error == nil:
                    next[tp] = record.offset + 1
                    sentByTopic[delivery.topicPartition.topic, default: 0] += 1
                    total += 1
                case .some(.success(let delivery)):
                    failure = failure ?? delivery.error
                    stopped.insert(tp)
                case .some(.failure(let error)):
                    failure = failure ?? error
                    stopped.insert(tp)
                case .none:
                    stopped.insert(tp)
                }
            }
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
            Output.line("redriven \(total) dead letter(s) from \(topic)" + (byTopic.isEmpty ? "" : ": \(byTopic)"))
        }
        if let failure {
            throw CommandLineError(.failure, "pushworker redrive: a dead letter could not be sent back (\(failure.message)); it and the ones after it in its partition stay in \(topic) for the next run")
        }
    }

    /// How long the command waits to join the group and get partitions before it gives up: 60 s.
    static let joinTimeout = Duration.seconds(60)

    /// Polls up to `limit` records, returning early once none arrives for `idleTimeout` seconds after the
    /// consumer has partitions (joining the group does not count as idle).
    /// - Throws: ``KafkaError/Code/timedOut`` if no partition is assigned within ``joinTimeout``.
    private static func poll(_ consumer: KafkaConsumer, limit: Int, idleTimeout: Double, stop: StopFlag) throws -> [KafkaRecord] {
        var records: [KafkaRecord] = []
        let started = ContinuousClock.now
        var idleSince = started
        let idle = Duration.milliseconds(Int64(idleTimeout * 1000))
        while records.count < limit, !stop.isSet {
            if let record = try consumer.poll(timeoutMs: records.isEmpty ? 100 : 0) {
                records.append(record)
                idleSince = ContinuousClock.now
            } else if !records.isEmpty {
                break
            } else if consumer.assignment().isEmpty {
                idleSince = ContinuousClock.now
                if started.duration(to: .now) >= joinTimeout {
                    throw KafkaError(.timedOut, "no partition of the dead-letter topic was assigned within \(joinTimeout); does the topic exist?")
                }
            } else if idleSince.duration(to: .now) >= idle {
                break
            }
        }
        return records
    }

    /// The record sent back for dead letter `record`: to `target`, else to its source topic, with its
    /// key, value and headers, minus the failure headers pushworker added (`pushworker-attempts` stays).
    /// `nil` when there is no `target` and the record has no non-empty source-topic header.
    static func redriven(_ record: KafkaRecord, to target: String?) -> KafkaOutgoingRecord? {
        let source = record.headers.first { $0.name == DeadLetterRecord.sourceTopicHeader }?.value.map { String(decoding: $0, as: UTF8.self) }
        guard let topic = target ?? source, !topic.isEmpty else { return nil }
        let headers = record.headers.filter { !$0.name.hasPrefix(DeadLetterRecord.headerPrefix) || $0.name == Job.attemptsHeader }
        return KafkaOutgoingRecord(topic: topic, key: record.key, value: record.value, headers: headers)
    }

    /// One JSON line describing a dead letter (`--dry-run`).
    static func describe(_ record: KafkaRecord) -> String {
        func header(_ name: String) -> JSONValue {
            guard let value = record.headers.first(where: { $0.name == DeadLetterRecord.headerPrefix + name })?.value else { return .null }
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
        let object: JSONValue = .object([
            "deadLetter": .object([
                "topic": .string(record.topicPartition.topic), "partition": .int(Int64(record.topicPartition.partition)),
                "offset": .int(record.offset),
            ]),
            "source": .object(["topic": header("source-topic"), "partition": number("source-partition"), "offset": number("source-offset")]),
            "messageId": header("message-id"), "reason": header("reason"), "detail": header("detail"),
            "worker": header("worker"), "attempts": number("attempts"), "failedAt": header("failed-at"),
            "key": text(record.key), "value": text(record.value),
        ])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(object)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
