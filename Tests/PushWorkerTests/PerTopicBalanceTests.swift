import Foundation
import PushWorkerCore
import PushWorkerKafka
import PushWorker
import PushWorkerTesting
import Synchronization
import Testing

/// Scale-out (issue 23): every subscribed topic's partitions are balanced over the members on their own.
/// With all topics in one subscription, `cooperative-sticky` balanced the partition count over the topics
/// together, and a second member took the retry topic's partitions and no input.
@Suite(.timeLimit(.minutes(3)))
struct PerTopicBalanceTests {
    static func push(_ id: String) -> String { #"{"aps":{"content-available":1},"type":"ok","id":"\#(id)"}"# }

    static func waitFor(_ what: String, timeout: Duration = .seconds(60), _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while !condition() {
            if ContinuousClock.now >= deadline { throw KafkaError(.timedOut, "waited \(timeout) for: \(what)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Partitions held per topic.
    static func perTopic(_ partitions: [TopicPartition]) -> [String: Int] {
        Dictionary(grouping: partitions, by: \.topic).mapValues(\.count)
    }

    /// Two input topics and the retry topic, 4 partitions each. One member holds all 12; a second member
    /// joining leaves each with 2 of every topic, and both run records of the first input topic; when
    /// the second leaves, the first holds all 12 again.
    @Test func eachTopicIsSharedByTheMembers() async throws {
        var registry = WorkerRegistry(defaultBudget: .seconds(10))
        registry.register(type: "ok", worker: ClosureWorker { _ in .newData })
        let harness = try await PushWorkerTestHarness.start(registry: registry, partitions: 4) {
            $0.inputTopics.append($0.inputTopics[0].replacingOccurrences(of: "pushes-", with: "jobs-"))
            $0.memberPerTopic = true
        }
        let topics = harness.configuration.inputTopics + [harness.configuration.retries.topic]
        #expect(topics.count == 3)
        try await Self.waitFor("the first member holds every partition of the three topics") {
            harness.service.currentStatistics.assignedPartitions.count == 12
        }
        let second = Mutex<[ReceivedResult]>([])
        let other = PushWorkerService(configuration: harness.configuration, registry: registry) { record in
            second.withLock { $0.append(ReceivedResult(record: record)) }
        }
        let otherTask = Task { try await other.run() }
        let balanced = Dictionary(uniqueKeysWithValues: topics.map { ($0, 2) })
        try await Self.waitFor("each member holds 2 partitions of each topic") {
            Self.perTopic(harness.service.currentStatistics.assignedPartitions) == balanced
                && Self.perTopic(other.currentStatistics.assignedPartitions) == balanced
        }
        let firstHeld = Set(harness.service.currentStatistics.assignedPartitions)
        let secondHeld = Set(other.currentStatistics.assignedPartitions)
        #expect(firstHeld.isDisjoint(with: secondHeld))
        // Two records per input partition of the first topic: each member runs those of its partitions.
        var ids: [String] = []
        for partition in Int32(0)..<4 {
            for n in 0..<2 {
                let id = "p\(partition)-\(n)"
                try await harness.produce(Self.push(id), headers: ["apns-id": id], partition: partition)
                ids.append(id)
            }
        }
        try await Self.waitFor("every record has a result") {
            let got = Set(harness.receivedResults.compactMap(\.messageId) + second.withLock { $0.compactMap(\.messageId) })
            return got.isSuperset(of: ids)
        }
        let byFirst = Set(harness.receivedResults.compactMap(\.messageId))
        let bySecond = Set(second.withLock { $0.compactMap(\.messageId) })
        let input = harness.configuration.inputTopics[0]
        for partition in Int32(0)..<4 {
            let owner = firstHeld.contains(TopicPartition(topic: input, partition: partition)) ? byFirst : bySecond
            #expect(owner.isSuperset(of: ["p\(partition)-0", "p\(partition)-1"]), "the owner of partition \(partition) ran its records")
        }
        #expect(!byFirst.isEmpty && !bySecond.isEmpty, "both members took input: \(byFirst.sorted()) / \(bySecond.sorted())")
        other.shutdown()
        try await otherTask.value
        try await Self.waitFor("the first member holds all 12 again") {
            harness.service.currentStatistics.assignedPartitions.count == 12
        }
        #expect(Self.perTopic(harness.service.currentStatistics.assignedPartitions) == Dictionary(uniqueKeysWithValues: topics.map { ($0, 4) }))
        try await harness.shutdown()
    }
}
