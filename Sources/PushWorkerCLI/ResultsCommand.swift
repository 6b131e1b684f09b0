import Foundation
import PushWorkerCore
import PushWorkerKafka
import Synchronization

/// `pushworker results`: prints result records, one JSON object per line.
struct ResultsCommand {
    static let help = """
    Usage: pushworker results [--bootstrap-servers HOSTS] [--topic T] [--from-beginning] [--count N]
                              [--timeout SECONDS] [--follow] [--exit-at-end]

    Prints result records, one JSON object per line, reading every partition of the results topic directly
    (never joining a group, committing nothing), with isolation.level=read_committed (librdkafka's default):
    results of aborted transactions (the exactly-once mode) are not printed.

    Options:
      -b, --bootstrap-servers HOSTS   Kafka brokers (also --bootstrap-server; default:
                                  $PUSHWORKER_BOOTSTRAP_SERVERS, else the address a running
                                  'pushworker dev' leaves in its bootstrap file)
      --topic T                   results topic (default: push-results); a warning names the topics
                                  that exist when T is not one of them
      --from-beginning            start at the oldest result (default: only results written from now on)
      --count N                   stop after N results; exit 1 if fewer arrive before the timeout
      --timeout SECONDS           stop after this long (default 10; ignored with --follow)
      --follow                    keep printing until SIGTERM/SIGINT
      -e, --exit-at-end           stop once every partition has been read to its end (as kcat -e),
                                  exit 0; with --from-beginning: print what the topic holds, then exit
    """

    func execute(_ arguments: [String]) async throws {
        var parser = ArgumentParser(command: "results", options: [
            .bootstrapServers, .init(name: "topic", takesValue: true),
            .init(name: "from-beginning", takesValue: false), .init(name: "count", takesValue: true),
            .init(name: "timeout", takesValue: true), .init(name: "follow", takesValue: false),
            .init(name: "exit-at-end", takesValue: false, short: "e"),
        ])
        try parser.parse(arguments)
        if parser.has("help") { Output.line(Self.help); return }
        let address = try BrokerAddress.resolve(flag: parser.value("bootstrap-servers"), command: "results")
        let servers = address.servers
        let topic = parser.value("topic") ?? "push-results"
        let count = try parser.int("count", in: 1...Int.max)
        let timeout = try parser.double("timeout", in: 0...86_400 * 365) ?? 10
        let follow = parser.has("follow")
        let fromBeginning = parser.has("from-beginning")
        let exitAtEnd = parser.has("exit-at-end")
        if exitAtEnd && follow {
            throw CommandLineError(.usage, "pushworker results: --exit-at-end and --follow exclude each other")
        }
        try await address.check(command: "results")
        let stop = StopFlag()
        let watcher = SignalWatcher { stop.set() }
        defer { withExtendedLifetime(watcher) {} }
        let printed = try await DedicatedThread.run(name: "pushworker-results") { () throws -> Int in
            var properties = KafkaConfiguration(["bootstrap.servers": servers])
            if exitAtEnd { properties["enable.partition.eof"] = "true" }
            let consumer = try KafkaConsumer.reader(configuration: properties, logHandler: PushWorkerLogger(label: "pushworker.results").kafkaLogHandler)
            let metadataTimeout = Int32(min(10_000, max(1_000, timeout * 1000)))
            // Before the topic is asked for by name: the embedded cluster creates a topic it is asked about.
            if let known = try? consumer.topicNames(timeoutMs: metadataTimeout), !known.contains(topic) {
                Output.error(Self.missingTopicWarning(topic, known: known))
            }
            let partitions = try consumer.partitions(of: topic, timeoutMs: metadataTimeout)
            try consumer.assign(partitions.map { TopicPartitionOffset($0, offset: fromBeginning ? KafkaConsumer.offsetBeginning : KafkaConsumer.offsetEnd) })
            let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int64(timeout * 1000)))
            var printed = 0
            // Partitions read to their end (exit-at-end); a record read after an end reopens its partition.
            var ended = Set<TopicPartition>()
            while !stop.isSet && (follow || ContinuousClock.now < deadline) {
                if let count, printed >= count { break }
                if exitAtEnd && ended.count >= partitions.count { break }
                guard let record = try consumer.poll(timeoutMs: 100, endOfPartition: { partition, _ in ended.insert(partition) }) else { continue }
                ended.remove(record.topicPartition)
                Output.line(bytes: record.value ?? [])
                printed += 1
            }
            try? consumer.close()
            return printed
        }
        if let count, printed < count, !stop.isSet {
            throw CommandLineError(.failure, "pushworker results: \(printed) of \(count) results arrived within \(timeout) s" + (exitAtEnd ? " or before the end of the topic" : ""))
        }
    }

    /// The warning for a `--topic` the cluster does not have, naming a close topic name when there is one,
    /// else the topics there are (at most 10).
    static func missingTopicWarning(_ topic: String, known: [String]) -> String {
        let visible = known.filter { !$0.hasPrefix("__") }
        let hint = Suggestion.closest(to: topic, among: visible).map { "; did you mean '\($0)'?" }
            ?? (visible.isEmpty ? "; the cluster has no topics yet" : "; its topics: " + visible.prefix(10).joined(separator: ", ") + (visible.count > 10 ? ", …" : ""))
        return "pushworker results: warning: topic '\(topic)' does not exist (yet)\(hint)"
    }
}
