import Foundation
import PushWorkerKafka
import Synchronization
import Testing

/// `KafkaGroupMembers`: one group member per topic, read by one thread as one consumer (issue 23).
@Suite(.timeLimit(.minutes(2)))
struct KafkaGroupMembersTests {
    /// A backlog of 3 000 records in one topic and 20 in another: the second topic's records come within
    /// the first turn of the busy topic (256 records) of being there, not after its whole backlog; each
    /// member holds only its topic's partitions; offsets stored and committed through the members reach
    /// the group; a blocked poll wakes up for a record that arrives later (the eventfd).
    @Test func topicsTakeTurnsAndEachMemberHoldsItsTopic() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let busy = KafkaClientTests.uniqueName("busy")
        let quiet = KafkaClientTests.uniqueName("quiet")
        try cluster.createTopic(busy, partitions: 2)
        try cluster.createTopic(quiet, partitions: 2)
        let producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers, "linger.ms": "5"]))
        for n in 0..<3000 { try producer.produce(KafkaOutgoingRecord(topic: busy, key: Array("k\(n)".utf8), value: [0x7B, 0x7D]), token: 0) }
        for n in 0..<20 { try producer.produce(KafkaOutgoingRecord(topic: quiet, key: Array("q\(n)".utf8), value: [0x7B, 0x7D]), token: 0) }
        _ = await producer.flush(timeoutMs: 10_000)
        var properties = KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers])
        properties["group.id"] = KafkaClientTests.uniqueName("group")
        properties["enable.auto.offset.store"] = "false"
        properties["enable.auto.commit"] = "false"
        properties["auto.offset.reset"] = "earliest"
        properties["fetch.wait.max.ms"] = "10"
        // The embedded cluster holds every rebalance after a group's first for session.timeout.ms - 1 s: a
        // member that misses the first join (a loaded machine) then waits 5 s, not librdkafka's 44 s.
        properties["session.timeout.ms"] = "6000"
        properties["heartbeat.interval.ms"] = "500"
        let events = Mutex<[KafkaRebalanceEvent]>([])
        let members = try KafkaGroupMembers(configuration: properties, topics: [busy, quiet, busy], onRebalance: { event in events.withLock { $0.append(event) } })
        #expect(members.members.count == 2 && members.topics == [busy, quiet])
        let order = try await DedicatedThread.run(name: "test-members") { () throws -> [String] in
            members.connect(timeoutMs: 5000)
            try members.subscribe()
            var order: [String] = []
            let deadline = ContinuousClock.now.advanced(by: .seconds(60))
            // Wait until both members hold partitions and both topics have records fetched, so that the
            // turns (not the fetch order) decide what comes first.
            while !(members.everyMemberAssigned && members.assignment().count == 4) && ContinuousClock.now < deadline {
                _ = try members.poll(timeoutMs: 100)
            }
            // A member that missed the group's first join lets the other read (and, after the rebalance,
            // read again) before both hold their partitions: start over from the beginning of each.
            _ = try members.seek(members.assignment().map { TopicPartitionOffset($0, offset: KafkaConsumer.offsetBeginning) })
            order.removeAll()
            Thread.sleep(forTimeInterval: 1)
            while order.count < 3020 && ContinuousClock.now < deadline {
                if let record = try members.poll(timeoutMs: 100) { order.append(record.topicPartition.topic) }
            }
            return order
        }
        #expect(order.count == 3020)
        #expect(order.filter { $0 == quiet }.count == 20)
        if let lastQuiet = order.lastIndex(of: quiet) {
            #expect(lastQuiet < 2 * KafkaGroupMembers.turnLength + 40, "the quiet topic's records came within a turn or two, not after 3 000: last at \(lastQuiet)")
        }
        let assigned = Set(members.assignment())
        #expect(assigned == Set([busy, quiet].flatMap { topic in (0..<2).map { TopicPartition(topic: topic, partition: Int32($0)) } }))
        for member in members.members {
            #expect(Set(member.assignment().map(\.topic)).count == 1, "each member holds one topic: \(member.assignment())")
        }
        // Offsets go to the member of their topic.
        let offsets = [TopicPartitionOffset(TopicPartition(topic: busy, partition: 0), offset: 1),
                       TopicPartitionOffset(TopicPartition(topic: quiet, partition: 1), offset: 2)]
        #expect(members.storeOffsets(offsets).isEmpty)
        let committed = try await DedicatedThread.run(name: "test-commit") { () throws -> [TopicPartitionOffset] in
            try members.commit()
            return try members.members[0].committed([offsets[0].topicPartition, offsets[1].topicPartition], timeoutMs: 5000)
        }
        #expect(committed == offsets)
        // A blocked poll sees a record produced after it began waiting.
        let late = Task {
            try await Task.sleep(for: .milliseconds(300))
            _ = try await producer.send(KafkaOutgoingRecord(topic: quiet, value: [0x7B, 0x7D]))
        }
        let woke = try await DedicatedThread.run(name: "test-wait") { () throws -> String? in
            let deadline = ContinuousClock.now.advanced(by: .seconds(10))
            while ContinuousClock.now < deadline {
                if let record = try members.poll(timeoutMs: 5000) { return record.topicPartition.topic }
            }
            return nil
        }
        try await late.value
        #expect(woke == quiet)
        try await DedicatedThread.run(name: "test-close") { try members.close() }
        _ = await producer.close()
        try await KafkaClientTests.shutdown(cluster)
    }
}

/// Static membership with a member per topic: every member of a process gets its own `group.instance.id`.
@Suite struct GroupInstanceIdTests {
    @Test func eachMemberHasItsOwnStableId() {
        #expect(KafkaGroupMembers.instanceId("pushworker-0", topic: "pushes", position: 0) == "pushworker-0")
        #expect(KafkaGroupMembers.instanceId("pushworker-0", topic: "push-retries", position: 1) == "pushworker-0.push-retries")
        let long = String(repeating: "p", count: 240)
        #expect(KafkaGroupMembers.instanceId(long, topic: "push-retries", position: 2) == long + ".2")
    }
}
