import Foundation
import PushWorkerKafka
import Testing

/// A consumer that takes its queued records faster than librdkafka refetches keeps reading without the
/// second-long pauses of librdkafka before 2.2.0 (`PrefetchRefill`).
@Suite(.timeLimit(.minutes(1)))
struct PrefetchRefillTests {
    /// 1 200 records in batches of at most 20, fetched about 180 at a time (`max.partition.fetch.bytes`
    /// 4096) and taken a little slower than they arrive, with `queued.min.messages=100`: the queue reaches
    /// its stop point about 20 times. librdkafka 2.0.2 alone then pauses until its broker thread's idle wait
    /// ends (measured with the refill switched off: 9 pauses of 980 ms, 9.7 s in all, and this test
    /// fails). With the refill each stop lasts a few milliseconds (0.85 s in all).
    @Test func aConsumerThatFillsItsQueueKeepsReadingWithoutPauses() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let topic = KafkaClientTests.uniqueName("refill")
        try cluster.createTopic(topic, partitions: 1)
        let producer = try KafkaProducer(configuration: KafkaConfiguration([
            "bootstrap.servers": cluster.bootstrapServers, "batch.num.messages": "20", "linger.ms": "1",
        ]))
        let count = 1200
        for index in 0..<count {
            try producer.produce(KafkaOutgoingRecord(topic: topic, partition: 0, value: Array("record \(index)".utf8)), token: UInt64(index))
        }
        #expect(await producer.flush(timeoutMs: 10_000) == 0)
        _ = await producer.close()

        let consumer = try KafkaConsumer.reader(configuration: KafkaConfiguration([
            "bootstrap.servers": cluster.bootstrapServers,
            "queued.min.messages": "100",
            "max.partition.fetch.bytes": "4096",
            "fetch.wait.max.ms": "20",
        ]))
        try consumer.assign([TopicPartitionOffset(TopicPartition(topic: topic, partition: 0), offset: KafkaConsumer.offsetBeginning)])
        let (offsets, gapsMs) = try await DedicatedThread.run(name: "test-consume") { () throws -> ([Int64], [Double]) in
            var offsets: [Int64] = []
            var gaps: [Double] = []
            var last: ContinuousClock.Instant?
            let deadline = ContinuousClock.now.advanced(by: .seconds(30))
            while offsets.count < count && ContinuousClock.now < deadline {
                guard let record = try consumer.poll(timeoutMs: 50) else { continue }
                let now = ContinuousClock.now
                if let last { gaps.append((now - last) / .milliseconds(1)) }
                last = now
                offsets.append(record.offset)
                // A record's work: slower than the fetches, so that the queue fills up.
                usleep(100)
            }
            return (offsets, gaps)
        }
        try await DedicatedThread.run(name: "close") { try consumer.close() }
        #expect(offsets == (0..<Int64(count)).map { $0 })
        let pauses = gapsMs.filter { $0 >= 400 }
        #expect(pauses.isEmpty, "pauses between records, ms: \(pauses)")
        try await KafkaClientTests.shutdown(cluster)
    }
}
