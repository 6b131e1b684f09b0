import Foundation
import PushWorkerKafka
import Synchronization
import Testing

/// Closing a consumer in the middle of its first rebalance.
@Suite(.timeLimit(.minutes(2)))
struct ConsumerCloseTests {
    /// Holds the consumer, so that it is destroyed (`rd_kafka_destroy`, which joins librdkafka's threads)
    /// where ``release()`` is called: on a dedicated thread, never on the cooperative pool other tests' jobs need.
    final class Holder: Sendable {
        private let held: Mutex<KafkaConsumer?>
        init(_ consumer: KafkaConsumer) { held = Mutex(consumer) }
        var consumer: KafkaConsumer {
            get throws { try held.withLock { try #require($0) } }
        }
        func release() { held.withLock { $0 = nil } }
    }

    /// librdkafka before 2.3.0 aborts the process (issue #4312, "Assertion `assignor_state' failed") when a
    /// cooperative-sticky consumer is destroyed after its JoinGroup was answered but before its first
    /// assignment. Here every SyncGroup fails until the consumer is being closed, so it sits in exactly
    /// that state; close() waits for the first assignment (which arrives once SyncGroup answers again),
    /// and the consumer is then closed and destroyed without taking the process down.
    @Test func closingBeforeTheFirstAssignmentNeitherCrashesNorHangs() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let topic = "close-\(UUID().uuidString.prefix(8))"
        try cluster.createTopic(topic, partitions: 2)
        // SyncGroup is API key 14; REBALANCE_IN_PROGRESS (27) makes the member join again, keeping its id.
        cluster.pushRequestErrors(apiKey: 14, count: 1000, error: 27)
        let events = Mutex<[KafkaRebalanceEvent]>([])
        let holder = Holder(try KafkaConsumer(configuration: KafkaConfiguration([
            "bootstrap.servers": cluster.bootstrapServers, "group.id": "close-\(UUID().uuidString.prefix(8))",
            "partition.assignment.strategy": "cooperative-sticky", "session.timeout.ms": "6000", "heartbeat.interval.ms": "500",
        ]), onRebalance: { event in events.withLock { $0.append(event) } }))
        try holder.consumer.subscribe([topic])
        // Poll until the JoinGroup has been answered (a member id) and a SyncGroup has been refused.
        let joined = try await DedicatedThread.run(name: "poll") { () -> Bool in
            let member = try holder.consumer
            let deadline = ContinuousClock.now.advanced(by: .seconds(30))
            while member.memberId == nil && ContinuousClock.now < deadline { _ = try member.poll(timeoutMs: 100) }
            for _ in 0..<10 { _ = try member.poll(timeoutMs: 100) }
            return member.memberId != nil
        }
        #expect(joined, "the consumer never joined its group")
        #expect(events.withLock { $0 }.isEmpty, "no assignment yet: every SyncGroup fails")
        let started = ContinuousClock.now
        let closing = Task { try await DedicatedThread.run(name: "close") { try holder.consumer.close() } }
        try await Task.sleep(for: .seconds(1))
        cluster.clearRequestErrors(apiKey: 14)
        try await closing.value
        #expect(ContinuousClock.now - started < .seconds(15))
        #expect(events.withLock { $0 }.contains { if case .assigned = $0 { true } else { false } })
        // Destroying the consumer is what aborted the process before the fix.
        try await DedicatedThread.run(name: "destroy") {
            holder.release()
            cluster.shutdown()
        }
    }
}
