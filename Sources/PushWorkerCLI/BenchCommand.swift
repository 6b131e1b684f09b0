import Foundation
import PushWorkerCore
import PushWorkerKafka
import PushWorker
import Synchronization

/// `pushworker bench`: throughput and latency of the whole service on the embedded cluster, as ratios
/// against a bare librdkafka pipe measured in the same run, and the share of each stage of the per-record
/// path (``HotPathStages``).
struct BenchCommand {
    let commandLine: PushWorkerCommandLine

    static let help = """
    Usage: pushworker bench [--records N] [--partitions P] [--max-in-flight M] [--latency-rate R]
                            [--latency-seconds S] [--skip-baseline] [--skip-stages]

    Measures on an embedded cluster (one broker), with the noop worker, each throughput run timed from the
    first record taken to the last result acknowledged:
      1. baseline: a bare librdkafka pipe in the same process (consume, produce a fixed result, store the
         offset once it is acknowledged; no parsing, validation or dispatch), over N pre-filled records;
      2. throughput: pushworker over N pre-filled records;
      3. latency: records produced at R per second for S seconds; produce-to-result-acknowledged p50/p99;
      4. stages: the per-record path cut into stages, each run alone over the same N pre-filled records with
         the components the service builds from the same configuration (the service's own path has no
         timer): poll + copy-out (KafkaConsumer.poll to InputRecord), validate (PushHeaders and
         PayloadValidator), route + dispatch (JobDispatcher.submit with the noop worker, less validate),
         encode result (ResultRecord.jsonBytes), produce (the result publisher's publish, less encode),
         delivery report + offset store (the producer's poll thread from the first delivery report to the
         last, with the offset tracking and rd_kafka_offsets_store). A figure is the CPU time of the thread
         running the stage (CLOCK_THREAD_CPUTIME_ID) per record, the fastest of 3 runs for validate,
         dispatch and encode; a share is the stage's part of the stages' sum. Waits for the broker and
         the work of librdkafka's own threads (fetching, building and sending requests) are in no stage,
         and the service runs its stages on several threads at once: the sum is not its time per record.
    Prints records/s, the ratio to the baseline, latency percentiles, peak memory (max RSS, read before the
    stages run) and the stage table. The service and the baseline run with the consumer settings
    `pushworker dev` gives the service (fetch.wait.max.ms=10).

    Options:
      --records N          records per throughput run (default 100000)
      --partitions P       partitions of the input topic (default 4)
      --max-in-flight M    maxInFlight of the service (default 1024)
      --latency-rate R     records per second in the latency run (default 20000)
      --latency-seconds S  length of the latency run (default 3)
      --skip-baseline      do not run the baseline
      --skip-stages        do not measure the stages
    """

    func execute(_ arguments: [String]) async throws {
        var parser = ArgumentParser(command: "bench", options: [
            .init(name: "records", takesValue: true), .init(name: "partitions", takesValue: true),
            .init(name: "max-in-flight", takesValue: true), .init(name: "latency-rate", takesValue: true),
            .init(name: "latency-seconds", takesValue: true), .init(name: "skip-baseline", takesValue: false),
            .init(name: "skip-stages", takesValue: false),
        ])
        try parser.parse(arguments)
        if parser.has("help") { Output.line(Self.help); return }
        let records = try parser.int("records", in: 1...10_000_000) ?? 100_000
        // librdkafka 2.0.2's mock broker keeps at most 5 MiB per partition and drops the oldest records beyond
        // it: spread the records so that each partition stays under 4 MiB.
        let requested = try parser.int("partitions", in: 1...256) ?? 4
        let partitions = max(requested, (records * 160 + 4 * 1_048_576 - 1) / (4 * 1_048_576))
        let maxInFlight = try parser.int("max-in-flight", in: 1...1_000_000) ?? 1024
        let latencyRate = try parser.int("latency-rate", in: 1...1_000_000) ?? 20_000
        let latencySeconds = try parser.double("latency-seconds", in: 0...600) ?? 3
        PushWorkerLogger.bootstrap(level: .warning)
        let logger = PushWorkerLogger(label: "pushworker.bench")
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logHandler: logger.kafkaLogHandler)
        defer { cluster.shutdown() }
        let servers = cluster.bootstrapServers
        let payload = Array(#"{"aps":{"content-available":1},"type":"bench","contentId":"article-123","seq":42}"#.utf8)

        Output.line("pushworker bench: \(records) records, \(partitions) partitions, noop worker, librdkafka \(KafkaLibrary.versionString), \(ProcessInfo.processInfo.activeProcessorCount) cores")

        var baselineRate: Double?
        if !parser.has("skip-baseline") {
            let topic = "bench-baseline-in"
            try cluster.createTopic(topic, partitions: partitions)
            try cluster.createTopic("bench-baseline-out", partitions: partitions)
            try await Self.fill(servers: servers, topic: topic, value: payload, count: records, partitions: partitions)
            baselineRate = try await DedicatedThread.run(name: "bench-baseline") {
                try BarePipe.run(servers: servers, input: topic, output: "bench-baseline-out", records: records)
            }
            Output.line("baseline (bare librdkafka pipe): \(Self.format(baselineRate ?? 0)) records/s")
        }

        // Throughput over pre-filled records.
        let input = "bench-pushes"
        try cluster.createTopic(input, partitions: partitions)
        try cluster.createTopic("bench-results", partitions: partitions)
        try await Self.fill(servers: servers, topic: input, value: payload, count: records, partitions: partitions)
        var configuration = ServiceConfiguration()
        configuration.kafka = KafkaConfiguration(["bootstrap.servers": servers])
        // What `pushworker dev` gives the service on the embedded cluster, and no bench-only tuning.
        EmbeddedClusterSettings.apply(to: &configuration)
        configuration.groupId = "bench-\(UUID().uuidString.prefix(8))"
        configuration.inputTopics = [input]
        configuration.resultsTopic = "bench-results"
        configuration.maxInFlight = maxInFlight
        configuration.maxBufferedRecords = max(50_000, records + 1)
        configuration.workers["bench"] = WorkerSpec(kind: .noop(result: .newData, reason: nil, delay: .zero))
        // Measured as deployed: metrics, statistics and the HTTP server on (on any free loopback port).
        configuration.httpServer = HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0)
        let throughput = try await Self.runService(configuration: configuration, registry: try commandLine.makeRegistry(configuration), expected: records, during: nil)
        let rate = throughput.rate
        var line = "pushworker: \(Self.format(rate)) records/s"
        if let baselineRate { line += String(format: " (%.2f× the baseline)", rate / baselineRate) }
        Output.line(line)

        // Latency at a fixed rate.
        if latencySeconds > 0 {
            let latencyCount = max(1, Int(Double(latencyRate) * latencySeconds))
            let latencyInput = "bench-latency"
            try cluster.createTopic(latencyInput, partitions: partitions)
            configuration.inputTopics = [latencyInput]
            configuration.groupId = "bench-latency-\(UUID().uuidString.prefix(8))"
            let sendTimes = SendTimes()
            // Warm-up records, one per partition, start the consumer's fetching; they are not measured.
            try await Self.fill(servers: servers, topic: latencyInput, value: payload, count: partitions, partitions: partitions)
            let result = try await Self.runService(configuration: configuration, registry: try commandLine.makeRegistry(configuration), expected: latencyCount + partitions) { collector in
                // Wait until every warm-up record has its result, then measure.
                while collector.count < partitions { try await Task.sleep(for: .milliseconds(5)) }
                try await Self.paced(servers: servers, topic: latencyInput, value: payload, count: latencyCount, rate: latencyRate, partitions: partitions, times: sendTimes)
            }
            let latencies = result.deliveries.compactMap { delivery -> Double? in
                guard let (partition, offset) = Self.source(of: delivery.value), let sent = sendTimes.time(partition: partition, offset: offset) else { return nil }
                return Double(delivery.atNs - sent) / 1e6
            }.sorted()
            if latencies.isEmpty {
                Output.line("latency: no samples")
            } else {
                func percentile(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count - 1) * p))] }
                Output.line(String(format: "latency at %d records/s (%d records): p50 %.2f ms, p99 %.2f ms, max %.2f ms", latencyRate, latencies.count, percentile(0.5), percentile(0.99), latencies.last ?? 0))
            }
        }
        var usage = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        Output.line("peak memory (max RSS): \(usage.ru_maxrss / 1024) MiB")

        // Stages, last: their records and results held in memory are not in the peak above.
        if !parser.has("skip-stages") {
            let stagesInput = "bench-stages"
            try cluster.createTopic(stagesInput, partitions: partitions)
            try cluster.createTopic("bench-stages-results", partitions: partitions)
            try await Self.fill(servers: servers, topic: stagesInput, value: payload, count: records, partitions: partitions)
            configuration.inputTopics = [stagesInput]
            configuration.resultsTopic = "bench-stages-results"
            configuration.groupId = "bench-stages-\(UUID().uuidString.prefix(8))"
            let stages = try await HotPathStages.measure(configuration: configuration, registry: try commandLine.makeRegistry(configuration), topic: stagesInput, records: records)
            StageTable.lines(stages, records: records).forEach(Output.line)
            Output.line(String(format: "pushworker run above: %.0f ns/record of wall-clock time (1 / its records/s; its stages run on several threads at once, and it waits for the broker)", 1e9 / rate))
        }
    }

    static func format(_ rate: Double) -> String { String(format: "%.0f", rate) }

    /// Produces `count` copies of `value` as fast as the producer takes them and waits for all acks.
    static func fill(servers: String, topic: String, value: [UInt8], count: Int, partitions: Int) async throws {
        let counter = BenchCounter()
        let failed = BenchCounter()
        let producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": servers, "linger.ms": "5"]), onDelivery: { reports in
            counter.add(reports.count)
            failed.add(reports.filter { $0.error != nil }.count)
        })
        var index: UInt64 = 0
        while index < UInt64(count) {
            if (try? producer.produce(KafkaOutgoingRecord(topic: topic, partition: Int32(index % UInt64(partitions)), value: value), token: index)) != nil {
                index += 1
            } else {
                try await Task.sleep(for: .milliseconds(1))
            }
        }
        while counter.value < count { try await Task.sleep(for: .milliseconds(5)) }
        await producer.close()
        if failed.value > 0 { throw CommandLineError(.failure, "pushworker bench: \(failed.value) input records were not delivered") }
    }

    /// Produces `count` records at `rate` per second, remembering when each was handed to librdkafka.
    static func paced(servers: String, topic: String, value: [UInt8], count: Int, rate: Int, partitions: Int, times: SendTimes) async throws {
        times.reserve(count)
        let producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": servers]), onDelivery: { reports in
            for report in reports where report.error == nil {
                times.placed(token: Int(report.token), partition: report.topicPartition.partition, offset: report.offset)
            }
        })
        let start = ContinuousClock.now
        for index in 0..<count {
            let due = start.advanced(by: .nanoseconds(Int64(index) * 1_000_000_000 / Int64(rate)))
            if due > .now.advanced(by: .microseconds(200)) { try await Task.sleep(until: due, clock: .continuous) }
            times.sent(token: index, atNs: BenchClock.nowNs())
            try? producer.produce(KafkaOutgoingRecord(topic: topic, partition: Int32(index % partitions), value: value), token: UInt64(index))
        }
        _ = await producer.flush(timeoutMs: 30_000)
        await producer.close()
    }

    struct Delivery: Sendable {
        var atNs: UInt64
        var value: [UInt8]
    }

    /// Runs the service until `expected` results are acknowledged.
    static func runService(
        configuration: ServiceConfiguration, registry: WorkerRegistry, expected: Int,
        during: (@Sendable (DeliveryCollector) async throws -> Void)?
    ) async throws -> (rate: Double, deliveries: [Delivery]) {
        let collector = DeliveryCollector(expected: expected, keepValues: during != nil)
        let service = PushWorkerService(configuration: configuration, registry: registry) { record in
            collector.add(record)
        }
        // Weak: the service holds the collector (through its result handler), so a strong reference back
        // would keep both alive for ever (LeakSanitizer reports the cycle).
        collector.onComplete = { [weak service] in service?.shutdown() }
        async let running: Void = service.run()
        // Timed from the first record taken: the group's first join (~3 s on the mock) is not pushworker's.
        while service.currentStatistics.recordsConsumed == 0 && collector.count == 0 {
            try await Task.sleep(for: .milliseconds(1))
        }
        let start = BenchClock.nowNs()
        if let during { try await during(collector) }
        try await running
        if collector.count < expected {
            throw CommandLineError(.failure, "pushworker bench: only \(collector.count) of \(expected) results arrived")
        }
        let seconds = Double((collector.completedAtNs ?? BenchClock.nowNs()) - start) / 1e9
        return (Double(expected) / seconds, collector.deliveries)
    }

    static func source(of value: [UInt8]) -> (Int32, Int64)? {
        guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: Data(value)),
              let source = object["source"], let partition = source["partition"]?.intValue, let offset = source["offset"]?.intValue else { return nil }
        return (Int32(partition), offset)
    }
}
