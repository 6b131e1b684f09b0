import PushWorkerCore
import PushWorkerKafka
import Testing
@testable import PushWorker

/// The progress line's figures, read from the service's own metrics (ServiceMetrics), and the
/// "no partitions assigned" warning's diagnosis.
@Suite struct ProgressLineTests {
    @Test func theLineCountsTheIntervalFromTheServicesMetrics() throws {
        let metrics = try ServiceMetrics(registeredTypes: ["ping"])
        metrics.recordsConsumed.increment(by: 100)
        metrics.resultsAcknowledged([ResultKey(type: "ping", result: .newData, reason: nil)])
        let before = ProgressSample(metrics.registry.snapshot())
        #expect(before.recordsConsumed == 100)
        #expect(before.consumerLag == nil, "no lag series before librdkafka's statistics")

        metrics.recordsConsumed.increment(by: 300)
        metrics.resultsAcknowledged(
            Array(repeating: ResultKey(type: "ping", result: .newData, reason: nil), count: 7)
                + [ResultKey(type: "other", result: .noData, reason: .noWorker), ResultKey(type: nil, result: .noData, reason: .invalidPayload)]
                + Array(repeating: ResultKey(type: "ping", result: .failed, reason: .timeout), count: 3))
        metrics.consumerLag.replaceAll([(["pushes", "0"], 10), (["pushes", "1"], 32)])
        metrics.jobsInFlight.set(5)
        metrics.resultsWaiting.set(2)
        let after = ProgressSample(metrics.registry.snapshot())

        let line = ProgressLine.metadata(previous: before, current: after, elapsed: .seconds(30))
        #expect(line == [
            "recordsPerSecond": "10.0", "newData": "7", "noData": "2", "failed": "3", "consumerLag": "42",
            "runningJobs": "5", "resultsWaiting": "2", "assignedPartitions": "0", "intervalSeconds": "30.0",
        ])
        // From the start (an empty sample): every record and result so far.
        let first = ProgressLine.metadata(previous: ProgressSample(), current: after, elapsed: .milliseconds(2500))
        #expect(first["recordsPerSecond"] == "160.0" && first["newData"] == "8" && first["intervalSeconds"] == "2.5")
    }

    @Test func unknownLagAndOddIntervalsAreSaidPlainly() {
        var sample = ProgressSample()
        sample.recordsConsumed = 10
        let line = ProgressLine.metadata(previous: ProgressSample(), current: sample, elapsed: .zero)
        #expect(line["consumerLag"] == "unknown")
        #expect(line["recordsPerSecond"] == "0.0", "no division by a zero interval")
        // A counter lower than before (a new registry) counts from zero rather than going negative.
        var lower = ProgressSample()
        lower.recordsConsumed = 4
        #expect(ProgressLine.metadata(previous: sample, current: lower, elapsed: .seconds(2))["recordsPerSecond"] == "2.0")
        #expect(ProgressLine.decimal(.infinity) == String(Int64.max) && ProgressLine.decimal(.nan) == "0")
        #expect(ProgressLine.decimal(0.04) == "0.0" && ProgressLine.decimal(12.35) == "12.4" && ProgressLine.decimal(-1.5) == "-1.5")
    }

    @Test func theIntervalIsAConfigurationKeyWithAnOffSwitch() throws {
        #expect(ServiceConfiguration().progressLogInterval == .seconds(30))
        #expect(try ConfigurationTests.load("{log: {progressIntervalMs: 1500}}").progressLogInterval == .milliseconds(1500))
        #expect(try ConfigurationTests.load("{log: {progressIntervalMs: 0}}").progressLogInterval == .zero)
        #expect(ConfigurationTests.error("{log: {progressIntervalMs: -1}}")?.key == "log.progressIntervalMs")
        #expect(ServiceConfiguration().unassignedWarningInterval == .seconds(10))
        #expect(try ConfigurationTests.load("{log: {unassignedWarningIntervalMs: 0}}").unassignedWarningInterval == .zero)
        let printed = try ConfigurationTests.load("{log: {progressIntervalMs: 2500, unassignedWarningIntervalMs: 1000}}").effectiveDescription(registry: nil)
        #expect(printed.contains(#""progressIntervalMs" : 2500"#), "\(printed)")
        #expect(printed.contains(#""unassignedWarningIntervalMs" : 1000"#), "\(printed)")
    }

    static func statistics(brokersUp: Bool = true, groupState: String = "up", joinState: String = "steady", topics: [String] = ["pushes"]) -> KafkaStatistics {
        KafkaStatistics(
            clientName: "rdkafka#consumer-1", clientType: "consumer", time: 0, messagesQueued: 0,
            brokers: [.init(name: "127.0.0.1:9092/1", nodeId: 1, source: "learned", state: brokersUp ? "UP" : "DOWN", requestTimeouts: 0)],
            partitions: topics.flatMap { topic in (0..<2).map { KafkaStatistics.Partition(topic: topic, partition: $0, consumerLag: -1, highWatermark: 0) } },
            consumerGroup: .init(state: groupState, joinState: joinState, assignmentSize: 0, rebalanceCount: 0))
    }

    @Test func theWarningNamesTheLikelyCause() {
        func diagnose(_ statistics: KafkaStatistics?, age: Duration = .seconds(1), intervalMs: Int = 5000) -> UnassignedDiagnosis {
            UnassignedDiagnosis.diagnose(statistics: statistics.map { ($0, age) }, statisticsIntervalMs: intervalMs, subscribedTopics: ["pushes", "push-retries"])
        }
        #expect(diagnose(nil) == .noStatistics)
        #expect(diagnose(Self.statistics(), intervalMs: 0) == .noStatistics)
        #expect(diagnose(Self.statistics(), age: .seconds(60)) == .statisticsStale)
        #expect(diagnose(Self.statistics(brokersUp: false, groupState: "query-coord")) == .brokersUnreachable)
        #expect(diagnose(Self.statistics(groupState: "wait-coord")) == .coordinatorUnavailable(state: "wait-coord"))
        #expect(diagnose(Self.statistics(topics: ["elsewhere"])) == .noPartitions)
        #expect(diagnose(Self.statistics(joinState: "wait-join")) == .rebalancing(joinState: "wait-join"))
        // librdkafka lists no partition before the first assignment: a rebalance is still a rebalance.
        #expect(diagnose(Self.statistics(joinState: "wait-join", topics: [])) == .rebalancing(joinState: "wait-join"))
        #expect(diagnose(Self.statistics()) == .otherMembersHoldThem(partitions: 2))
        let rebalancing = UnassignedDiagnosis.rebalancing(joinState: "wait-join").explanation(sessionTimeoutMs: 6000, maxPollIntervalMs: 30000)
        #expect(rebalancing.contains("session.timeout.ms (6000 ms here)") && rebalancing.contains("max.poll.interval.ms + 3 s (33000 ms here)"))
        #expect(UnassignedDiagnosis.brokersUnreachable.name == "brokerUnreachable")
    }
}
