import PushWorkerCore
import PushWorkerKafka

/// The record pushworker writes to the retry topic: the input record's key, value and headers unchanged,
/// plus headers that say when it runs and what it is.
///
/// Headers added (earlier `pushworker-*` headers of the input are replaced):
/// - `pushworker-attempts`: the runs so far (absent for a record that never ran); it runs as the next
///   attempt (``Job/attemptsHeader``).
/// - `pushworker-not-before`: when it runs, UNIX milliseconds (``NotBefore``); absent for a record that
///   follows a retry of its key and runs as soon as its turn comes.
/// - `pushworker-message-id`: the message id, so that every attempt of a record without an `apns-id`
///   reports the first one's `<topic>-<partition>-<offset>`.
/// - `pushworker-source-topic`, `pushworker-source-partition`, `pushworker-source-offset`: where the record
///   was first read (the result's `origin`; a dead letter names it, so `redrive` sends it there).
///
/// Keyed like its input, it goes to the retry-topic partition of its key, behind the key's earlier records
/// there: the retry topic keeps each key's order.
enum RetryRecord {
    /// The copy of `input` for the retry topic `topic`.
    static func make(for input: InputRecord, runs: Int, notBeforeMs: Int64?, messageId: String, origin: RecordSource, topic: String) -> KafkaOutgoingRecord {
        var headers = input.headers.compactMap { header -> KafkaHeader? in
            header.name.hasPrefix(DeadLetterRecord.headerPrefix) ? nil : KafkaHeader(name: header.name, value: header.value)
        }
        if runs > 0 { headers.append(KafkaHeader(name: Job.attemptsHeader, string: String(runs))) }
        if let notBeforeMs { headers.append(KafkaHeader(name: NotBefore.header, value: NotBefore(unixMs: notBeforeMs).headerValue)) }
        headers.append(KafkaHeader(name: PushHeaders.messageIdHeader, string: messageId))
        headers.append(KafkaHeader(name: PushHeaders.sourceTopicHeader, string: origin.topic))
        headers.append(KafkaHeader(name: PushHeaders.sourcePartitionHeader, string: String(origin.partition)))
        headers.append(KafkaHeader(name: PushHeaders.sourceOffsetHeader, string: String(origin.offset)))
        return KafkaOutgoingRecord(topic: topic, key: input.key, value: input.value, headers: headers)
    }

    /// The retry-topic copy of `input` for its next attempt.
    static func make(for input: InputRecord, retry: RetryRequest, topic: String) -> KafkaOutgoingRecord {
        make(for: input, runs: retry.runs, notBeforeMs: retry.notBeforeMs, messageId: retry.messageId, origin: retry.origin, topic: topic)
    }

    /// The retry-topic copy of `input` forwarded without a result (``Forward``).
    static func make(for input: InputRecord, forward: Forward, topic: String) -> KafkaOutgoingRecord {
        make(for: input, runs: forward.runs, notBeforeMs: forward.notBeforeMs, messageId: forward.messageId, origin: forward.origin, topic: topic)
    }
}
