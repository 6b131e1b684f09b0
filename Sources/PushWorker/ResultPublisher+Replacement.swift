import Foundation
import PushWorkerCore
import PushWorkerKafka

extension ResultPublisher {
    /// The longest `type`, `reason`, `worker` or `messageId` a minimal result keeps: 256 bytes.
    static let minimalFieldLimit = 256

    /// The smaller record that replaces `record` when it can never be produced (`error` is a
    /// ``ProduceFailure/recordRejected`` one), and its stage and stage name, or `nil` when there is nothing
    /// smaller to try (the record is then kept and produced again as it is).
    ///
    /// For a result (`result` is its ``ResultRecord``), from stage 0:
    /// 1. `withoutHeaders`: the same key and value, without the `apns-id` and `traceparent` headers;
    ///    `detail` says so, with their sizes. Skipped when the record has no headers.
    /// 2. `minimal`: no key, no headers; the value is the same result with `detail` replaced by a note of
    ///    what was dropped (with sizes: the key, the `apns-id` and `traceparent` headers as names plus
    ///    values, the detail, and any field below), and `messageId`, `type`, `reason` and `worker` each kept only when
    ///    at most ``minimalFieldLimit`` bytes (a longer `messageId` becomes `<topic>-<partition>-<offset>`,
    ///    the others `null`).
    ///
    /// For a dead letter, from stage 0:
    /// 1. `stub`: ``DeadLetterRecord/stub(of:dropKey:error:)`` keeping the key.
    /// 2. `stubWithoutKey`: the same without the key.
    static func replacement(of record: KafkaOutgoingRecord, result: ResultRecord?, isDeadLetter: Bool, stage: Int, error: KafkaError)
        -> (record: KafkaOutgoingRecord, stage: Int, name: String)? {
        let errorName = error.rdKafkaErrorName ?? error.code.description
        if isDeadLetter {
            if stage < 1, let stub = DeadLetterRecord.stub(of: record, dropKey: false, error: errorName) { return (stub, 1, "stub") }
            if stage < 2, let stub = DeadLetterRecord.stub(of: record, dropKey: true, error: errorName) { return (stub, 2, "stubWithoutKey") }
            return nil
        }
        guard let result, stage < 2 else { return nil }
        if stage < 1 && !record.headers.isEmpty {
            var reduced = result
            let sizes = record.headers.map { "\($0.name) \($0.value?.count ?? 0) bytes" }.joined(separator: ", ")
            let note = "pushworker: result headers not copied (\(sizes)): the record with them was refused (\(errorName))"
            reduced.detail = result.detail.map { "\(note); detail: \($0)" } ?? note
            return (KafkaOutgoingRecord(topic: record.topic, partition: record.partition, key: record.key, value: reduced.jsonBytes()), 1, "withoutHeaders")
        }
        var minimal = result
        var dropped: [String] = []
        if let key = result.key { dropped.append("key \(key.count) bytes") }
        // The result's headers (names and values), whether or not an earlier stage dropped them already.
        let headerBytes = (result.apnsIdHeader.map { "apns-id".utf8.count + $0.count } ?? 0)
            + (result.traceparentHeader.map { "traceparent".utf8.count + $0.count } ?? 0)
        if headerBytes > 0 { dropped.append("headers \(headerBytes) bytes") }
        if let detail = result.detail { dropped.append("detail \(detail.utf8.count) bytes") }
        if minimal.messageId.utf8.count > minimalFieldLimit {
            dropped.append("messageId \(minimal.messageId.utf8.count) bytes")
            minimal.messageId = "\(result.source.topic)-\(result.source.partition)-\(result.source.offset)"
        }
        if let type = minimal.type, type.utf8.count > minimalFieldLimit {
            dropped.append("type \(type.utf8.count) bytes")
            minimal.type = nil
        }
        if let reason = minimal.reason, reason.rawValue.utf8.count > minimalFieldLimit {
            dropped.append("reason \(reason.rawValue.utf8.count) bytes")
            minimal.reason = nil
        }
        if let worker = minimal.worker, worker.utf8.count > minimalFieldLimit {
            dropped.append("worker \(worker.utf8.count) bytes")
            minimal.worker = nil
        }
        minimal.detail = "pushworker: minimal result, the full one was refused (\(errorName)); dropped: \(dropped.joined(separator: ", "))"
        minimal.key = nil
        return (KafkaOutgoingRecord(topic: record.topic, partition: record.partition, key: nil, value: minimal.jsonBytes()), 2, "minimal")
    }
}
