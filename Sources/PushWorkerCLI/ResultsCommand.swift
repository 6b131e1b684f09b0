import Foundation
import PushWorkerCore
import PushWorkerKafka
import Synchronization

/// `pushworker results`: prints result records, one JSON object per line.
struct ResultsCommand {
    static let help = """
    Usage: pushworker results --bootstrap-servers HOSTS [--topic T] [--from-beginning] [--count N]
                              [--timeout SECONDS] [--follow]

    Prints result records, one JSON object per line, reading every partition of the results topic directly
    (never joining a group, committing nothing), with isolation.level=read_committed (librdkafka's default):
    results of aborted transactions (the exactly-once mode) are not printed.

    Options:
      --bootstrap-servers HOSTS   Kafka brokers (default: $PUSHWORKER_BOOTSTRAP_SERVERS)
      --topic T                   results topic (default: push-results)
      --from-beginning            start at the oldest result (default: only results written from now on)
      --count N                   stop after N results; exit 1 if fewer arrive before the timeout
      --timeout SECONDS           stop after this long (default 10; ignored with --follow)
      --follow                    keep printing until SIGTERM/SIGINT
    """

    func execute(_ arguments: [String]) async throws {
        var parser = ArgumentParser(command: "results", options: [
            .bootstrapServers, .init(name: "topic", takesValue: true),
            .init(name: "from-beginning", takesValue: false), .init(name: "count", takesValue: true),
            .init(name: "timeout", takesValue: true), .init(name: "follow", takesValue: false),
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
        try await address.check(command: "results")
        let stop = StopFlag()
        let watcher = SignalWatcher { stop.set() }
        defer { withExtendedLifetime(watcher) {} }
        let printed = try await DedicatedThread.run(name: "pushworker-results") { () throws -> Int in
            let consumer = try KafkaConsumer.reader(
                configuration: KafkaConfiguration(["bootstrap.servers": servers]), logHandler: PushWorkerLogger(label: "pushworker.results").kafkaLogHandler)
            let partitions = try consumer.partitions(of: topic, timeoutMs: Int32(min(10_000, max(1_000, timeout * 1000))))
            try consumer.assign(partitions.map { TopicPartitionOffset($0, offset: fromBeginning ? KafkaConsumer.offsetBeginning : KafkaConsumer.offsetEnd) })
            let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int64(timeout * 1000)))
            var printed = 0
            while !stop.isSet && (follow || ContinuousClock.now < deadline) {
                if let count, printed >= count { break }
                guard let record = try consumer.poll(timeoutMs: 100) else { continue }
                Output.line(bytes: record.value ?? [])
                printed += 1
            }
            try? consumer.close()
            return printed
        }
        if let count, printed < count, !stop.isSet {
            throw CommandLineError(.failure, "pushworker results: \(printed) of \(count) results arrived within \(timeout) s")
        }
    }
}
