import Foundation
import PushWorkerCore
import PushWorkerKafka
import Synchronization

/// `pushworker produce`: sends APNs-style background payloads built from flags, or JSONL lines as they are.
struct ProduceCommand {
    static let help = """
    Usage: pushworker produce [--bootstrap-servers HOSTS] [--topic T] [--type T] [--set KEY=VALUE]...
                              [--key K] [--header K=V]... [--count N] [--rate PER_SEC] [--file FILE or -]
                              [--timeout SECONDS] [--verbose]

    Builds {"aps":{"content-available":1},"type":T,KEY:VALUE,...} and sends it COUNT times, or sends each
    non-empty line of FILE (or stdin with '-') as the record value exactly as written; a line that is not a
    JSON object (it will get failed/invalidPayload) is sent too, with a warning naming its line number on
    stderr. Prints how many records were delivered and how many failed; exits 1 if any failed. When no
    broker answers at HOSTS it exits 1 within moments, before sending anything.

    Options:
      -b, --bootstrap-servers HOSTS   Kafka brokers (also --bootstrap-server; default:
                                  $PUSHWORKER_BOOTSTRAP_SERVERS, else the address a running
                                  'pushworker dev' leaves in its bootstrap file)
      --topic T                   topic (default: pushes)
      --type T                    the payload's "type"
      --set KEY=VALUE             a payload key; VALUE is used as JSON when it parses as JSON (42, true,
                                  {"a":1}, "quoted"), else as a string. --set aps=... replaces "aps".
                                  Repeatable.
      --key K                     the record key (ordering key)
      --header K=V                a record header, e.g. apns-id=abc, apns-expiration=1767225600,
                                  apns-priority=5, traceparent=00-... Repeatable.
      --count N                   how many records (default 1; with --file: how many times the file is sent)
      --rate PER_SEC              at most this many records per second (default: as fast as possible)
      --file FILE                 send the lines of FILE ('-' for stdin) instead of building a payload
      --timeout SECONDS           how long a record may wait for the broker before it counts as failed
                                  (librdkafka message.timeout.ms; default 30)
      -v, --verbose               print where each record went: 'line L: TOPIC partition P offset O'
                                  ('record N: ...' without --file), as the broker acknowledges them
    """

    func execute(_ arguments: [String]) async throws {
        var parser = ArgumentParser(command: "produce", options: [
            .bootstrapServers, .init(name: "topic", takesValue: true),
            .init(name: "type", takesValue: true), .init(name: "set", takesValue: true, repeatable: true),
            .init(name: "key", takesValue: true), .init(name: "header", takesValue: true, repeatable: true),
            .init(name: "count", takesValue: true), .init(name: "rate", takesValue: true), .init(name: "file", takesValue: true),
            .init(name: "timeout", takesValue: true), .init(name: "verbose", takesValue: false, short: "v"),
        ])
        try parser.parse(arguments)
        if parser.has("help") { Output.line(Self.help); return }
        let address = try BrokerAddress.resolve(flag: parser.value("bootstrap-servers"), command: "produce")
        let servers = address.servers
        let topic = parser.value("topic") ?? "pushes"
        let count = try parser.int("count", in: 1...100_000_000) ?? 1
        let rate = try parser.double("rate", in: 0.001...10_000_000)
        let timeout = try parser.double("timeout", in: 0.001...86_400) ?? 30
        let headers = try parser.all("header").map { text -> KafkaHeader in
            guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                throw CommandLineError(.usage, "pushworker produce: --header must be NAME=VALUE, got '\(text)'")
            }
            return KafkaHeader(name: String(text[..<equals]), string: String(text[text.index(after: equals)...]))
        }
        let key = parser.value("key").map { Array($0.utf8) }
        let values: [[UInt8]]
        // What --verbose calls each value: its line number in the file, or nothing for a built payload.
        var lineNumbers: [Int]? = nil
        if let file = parser.value("file") {
            if parser.value("type") != nil || !parser.all("set").isEmpty {
                throw CommandLineError(.usage, "pushworker produce: --file sends lines as they are; it cannot be combined with --type or --set")
            }
            let input = InputLines(try InputLines.read(file, command: "produce"))
            input.warnings(file: file == "-" ? "stdin" : file).forEach(Output.error)
            values = input.lines.map(\.value)
            lineNumbers = input.lines.map(\.number)
        } else {
            values = [try PayloadBuilder.build(type: parser.value("type"), sets: parser.all("set"))]
        }
        let verbose = parser.has("verbose")
        try await address.check(command: "produce")
        let producer = try KafkaProducer(
            configuration: KafkaConfiguration(["bootstrap.servers": servers, "message.timeout.ms": String(Int(timeout * 1000))]),
            logHandler: PushWorkerLogger(label: "pushworker.produce").kafkaLogHandler)
        let total = count * values.count
        let counts = DeliveryCounts()
        let interval = rate.map { 1.0 / $0 }
        let start = ContinuousClock.now
        var sent = 0
        try await withThrowingTaskGroup(of: Void.self) { group in
            for round in 0..<count {
                for (index, value) in values.enumerated() {
                    if let interval {
                        let due = start.advanced(by: .seconds(interval * Double(sent)))
                        if due > .now { try await Task.sleep(until: due, clock: .continuous) }
                    }
                    let record = KafkaOutgoingRecord(topic: topic, key: key, value: value, headers: headers)
                    // A bounded window of sends awaiting their acknowledgement.
                    if sent >= 10_000 { try await group.next() }
                    let label = lineNumbers.map { "line \($0[index])" + (count > 1 ? " (round \(round + 1))" : "") } ?? "record \(sent + 1)"
                    group.addTask {
                        let report = try await producer.send(record)
                        counts.add(report.error)
                        if verbose {
                            Output.line(report.error.map { "\(label): failed: \($0.message)" } ?? "\(label): \(report.topicPartition.topic) partition \(report.topicPartition.partition) offset \(report.offset)")
                        }
                    }
                    sent += 1
                }
            }
            try await group.waitForAll()
        }
        await producer.close()
        let (delivered, failed, firstError) = counts.snapshot
        Output.line("delivered=\(delivered) failed=\(failed) topic=\(topic)")
        if failed > 0 || delivered != total {
            throw CommandLineError(.failure, "pushworker produce: \(failed) of \(total) records were not delivered\(firstError.map { ": \($0)" } ?? "")")
        }
    }
}
