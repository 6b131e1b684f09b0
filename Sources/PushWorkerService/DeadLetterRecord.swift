import PushWorkerCore
import PushWorkerKafka

/// The record pushworker writes to the dead-letter topic for a `failed` result: the input record's key,
/// value and headers unchanged, plus headers that say what failed and where the record came from.
///
/// Headers added (earlier `pushworker-*` headers of the input are replaced, so a record that fails again
/// after a redrive carries only its latest failure):
/// - `pushworker-attempts`: the runs so far (the result's `attempt`); a redriven record runs as the next
///   attempt (``Job/attemptsHeader``).
/// - `pushworker-reason`, `pushworker-detail` (when the result has one), `pushworker-worker` (when a
///   worker ran), `pushworker-message-id`: as in the result.
/// - `pushworker-source-topic`, `pushworker-source-partition`, `pushworker-source-offset`: the input
///   record's position (`redrive` sends the record back to `pushworker-source-topic`).
/// - `pushworker-failed-at`: the result's `finishedAt` (RFC 3339 UTC with milliseconds).
enum DeadLetterRecord {
    /// The prefix of the headers pushworker adds.
    static let headerPrefix = "pushworker-"

    /// The names of the headers pushworker adds, as written here and read by `pushworker redrive`.
    enum Header {
        static let attempts = Job.attemptsHeader
        static let reason = "pushworker-reason"
        static let detail = "pushworker-detail"
        static let worker = "pushworker-worker"
        static let messageId = "pushworker-message-id"
        static let sourceTopic = "pushworker-source-topic"
        static let sourcePartition = "pushworker-source-partition"
        static let sourceOffset = "pushworker-source-offset"
        static let failedAt = "pushworker-failed-at"
    }

    /// The dead letter of `input`, answered by the `failed` result `result`, for `topic`.
    static func make(for input: InputRecord, result: ResultRecord, topic: String) -> KafkaOutgoingRecord {
        var headers = input.headers.compactMap { header -> KafkaHeader? in
            header.name.hasPrefix(headerPrefix) ? nil : KafkaHeader(name: header.name, value: header.value)
        }
        func add(_ name: String, _ value: String?) {
            if let value { headers.append(KafkaHeader(name: name, string: value)) }
        }
        add(Header.attempts, String(result.attempt))
        add(Header.reason, result.reason?.rawValue)
        add(Header.detail, result.detail)
        add(Header.worker, result.worker)
        add(Header.messageId, result.messageId)
        add(Header.sourceTopic, input.source.topic)
        add(Header.sourcePartition, String(input.source.partition))
        add(Header.sourceOffset, String(input.source.offset))
        add(Header.failedAt, Clock.rfc3339(ms: result.finishedAtMs))
        return KafkaOutgoingRecord(topic: topic, key: input.key, value: input.value, headers: headers)
    }
}
