import Foundation
import PushWorkerKafka
import PushWorkerTesting
import Testing

/// The `pushworker-with-scheduler` executable: the service beside a service of its own under one signal
/// handler (`PushWorkerCommandLine.runService(_:alongside:)`), driven with real signals.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ServiceBesideSchedulerTests {
    static let executable = RunningCommand.builtExecutable("pushworker-with-scheduler")

    @Test func theFirstSignalCancelsTheSchedulerAndTheSecondStopsTheServiceFast() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let (input, results) = ("pushes-\(suffix)", "results-\(suffix)")
        try cluster.createTopic(input, partitions: 1)
        try cluster.createTopic(results, partitions: 1)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("with-scheduler-\(suffix).json5").path
        try """
        {
          kafka: { "bootstrap.servers": "\(cluster.bootstrapServers)" },
          consumer: { "session.timeout.ms": 6000, "fetch.wait.max.ms": 20 },
          groupId: "with-scheduler-\(suffix)",
          inputTopics: ["\(input)"],
          resultsTopic: "\(results)",
          httpServer: { enabled: false },
          workers: {
            "ping": { kind: "noop", result: "newData" },
            "long": { kind: "noop", result: "newData", delayMs: 60000, budgetMs: 60000 },
          },
        }
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let command = try RunningCommand(Self.executable, [path])
        #expect(try await command.waitForLines(1).first == "scheduler started")

        // One partition: the long job (offset 0) starts before the ping (offset 1) is answered.
        let producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers]))
        for type in ["long", "ping"] {
            let report = try await producer.send(KafkaOutgoingRecord(topic: input, value: Array(#"{"aps":{"content-available":1},"type":"\#(type)"}"#.utf8)))
            #expect(report.error == nil)
        }
        await producer.close()
        let answered = try await DedicatedThread.run(name: "test-read-results") { () throws -> Int in
            let reader = try KafkaConsumer.reader(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers]))
            try reader.assign([TopicPartitionOffset(TopicPartition(topic: results, partition: 0), offset: KafkaConsumer.offsetBeginning)])
            let deadline = ContinuousClock.now.advanced(by: .seconds(60))
            var count = 0
            while count == 0 && ContinuousClock.now < deadline { if try reader.poll(timeoutMs: 50) != nil { count += 1 } }
            try? reader.close()
            return count
        }
        #expect(answered == 1, "the ping was answered")

        // First signal: the scheduler is cancelled; the service waits for the 60 s job (a graceful stop).
        command.signal(SIGTERM)
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        while !command.stdoutLines.contains("scheduler stopped") && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(command.stdoutLines.contains("scheduler stopped"), "\(command.stdoutLines)")
        #expect(command.isRunning, "the graceful stop waits for the running job")

        // Second signal: the service stops fast, and the process exits normally (not 130).
        let start = ContinuousClock.now
        command.signal(SIGTERM)
        #expect(try await command.waitForExit(timeout: .seconds(30)) == 0, "\(command.stderr.suffix(2000))")
        #expect(start.duration(to: .now) < .seconds(15))
        #expect(command.stderr.contains("stopping now"), "\(command.stderr.suffix(2000))")
        _ = try await DedicatedThread.run(name: "test-cluster-stop") { cluster.shutdown() }
    }
}
