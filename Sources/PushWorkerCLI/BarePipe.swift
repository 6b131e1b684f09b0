import Foundation
import PushWorkerKafka
import Synchronization

/// The bench's baseline: the least a librdkafka consume-produce-store pipe can do, with this module's
/// wrapper and no pushworker logic: consume, produce a fixed result, store the offset once acknowledged.
enum BarePipe {
    /// Pipes `records` records from `input` to `output`; returns records per second from the first record
    /// taken to the last acknowledgement. Blocking: dedicated thread.
    static func run(servers: String, input: String, output: String, records: Int) throws -> Double {
        var consumerConfiguration = KafkaConfiguration(["bootstrap.servers": servers])
        consumerConfiguration["group.id"] = "bench-baseline-\(UUID().uuidString.prefix(8))"
        consumerConfiguration["enable.auto.offset.store"] = "false"
        consumerConfiguration["auto.offset.reset"] = "earliest"
        // The service's settings on the embedded cluster, no more, so that the ratio compares like with like.
        let consumer = try KafkaConsumer(configuration: EmbeddedClusterSettings.applied(to: consumerConfiguration))
        let ackBox = AckBox()
        let result = Array(#"{"result":"noData"}"#.utf8)
        let producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": servers, "enable.idempotence": "true"]), onDelivery: { reports in
            var offsets: [TopicPartition: Int64] = [:]
            for report in reports where report.error == nil {
                let partition = Int32(truncatingIfNeeded: report.token >> 48)
                let offset = Int64(report.token & 0xFFFF_FFFF_FFFF)
                let tp = TopicPartition(topic: input, partition: partition)
                offsets[tp] = max(offsets[tp] ?? 0, offset + 1)
            }
            consumer.storeOffsets(offsets.map { TopicPartitionOffset($0.key, offset: $0.value) })
            ackBox.count.add(reports.count, ordering: .relaxed)
        })
        try consumer.subscribe([input])
        var consumed = 0
        var start: UInt64?
        while ackBox.count.load(ordering: .relaxed) < records {
            guard consumed < records, let record = try consumer.poll(timeoutMs: consumed < records ? 100 : 10) else {
                if consumed >= records { Thread.sleep(forTimeInterval: 0.001) }
                continue
            }
            if start == nil { start = BenchClock.nowNs() }
            consumed += 1
            let token = UInt64(UInt32(bitPattern: record.topicPartition.partition)) << 48 | UInt64(record.offset)
            let outgoing = KafkaOutgoingRecord(topic: output, key: record.key, value: result)
            while !produced(producer, outgoing, token) {
                Thread.sleep(forTimeInterval: 0.0005)
            }
        }
        let rate = Double(records) / (Double(BenchClock.nowNs() - (start ?? BenchClock.nowNs())) / 1e9)
        try? consumer.close()
        return rate
    }
}

/// Produces once; false when librdkafka's queue is full (or the record was refused).
private func produced(_ producer: KafkaProducer, _ record: KafkaOutgoingRecord, _ token: UInt64) -> Bool {
    (try? producer.produce(record, token: token)) != nil
}
