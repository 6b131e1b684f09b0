import PushWorkerKafka
import Synchronization

/// Produces a ledger test's inputs: one silent push per id, with the id as its `apns-id` header (so each
/// result's `messageId` names its input), as fast as librdkafka takes them.
public enum LedgerInputs {
    /// The value of every input: `{"aps":{"content-available":1},"type":"<type>"}`.
    public static func value(type: String) -> [UInt8] {
        Array(#"{"aps":{"content-available":1},"type":"\#(type)"}"#.utf8)
    }

    /// Produces one push of `type` per id to `topic`, without a key, and waits until the broker has
    /// acknowledged every one.
    /// - Parameters:
    ///   - servers: `bootstrap.servers`.
    ///   - partitions: when set, the `i`-th id goes to partition `i % partitions` (an even spread, so every
    ///     member of a group has work); `nil` lets librdkafka choose (its sticky partitioner fills one
    ///     partition at a time).
    ///   - timeout: how long the deliveries may take in all (default 60 s).
    /// - Throws: ``KafkaError`` if the producer cannot start, a record cannot be enqueued, or not every
    ///   record was acknowledged within `timeout` (``KafkaError/Code/timedOut``, with how many were).
    public static func produce(_ ids: [String], type: String, topic: String, servers: String, partitions: Int? = nil, timeout: Duration = .seconds(60)) async throws {
        let delivered = Atomic<Int>(0)
        let failed = Atomic<Int>(0)
        let producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": servers, "linger.ms": "5"]), onDelivery: { reports in
            for report in reports {
                if report.error == nil { delivered.add(1, ordering: .relaxed) } else { failed.add(1, ordering: .relaxed) }
            }
        })
        let value = Self.value(type: type)
        for (index, id) in ids.enumerated() {
            let partition = partitions.map { Int32(index % max(1, $0)) }
            let record = KafkaOutgoingRecord(topic: topic, partition: partition, value: value, headers: [KafkaHeader(name: "apns-id", string: id)])
            while try !enqueue(record, token: UInt64(index), on: producer) {
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while delivered.load(ordering: .relaxed) + failed.load(ordering: .relaxed) < ids.count && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        await producer.close()
        let (ok, bad) = (delivered.load(ordering: .relaxed), failed.load(ordering: .relaxed))
        if ok != ids.count {
            throw KafkaError(.timedOut, "\(ok) of \(ids.count) inputs acknowledged within \(timeout) (\(bad) failed)")
        }
    }

    /// Enqueues `record`; false when librdkafka's queue is full (try again after deliveries).
    private static func enqueue(_ record: KafkaOutgoingRecord, token: UInt64, on producer: KafkaProducer) throws -> Bool {
        do {
            try producer.produce(record, token: token)
            return true
        } catch {
            if error.code == .queueFull { return false }
            throw error
        }
    }
}
