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
    /// The header naming the input topic a dead letter came from.
    static let sourceTopicHeader = "pushworker-source-topic"

    /// The dead letter of `input`, answered by the `failed` result `result`, for `topic`.
    static func make(for input: InputRecord, result: ResultRecord, topic: String) -> KafkaOutgoingRecord {
        var headers = input.headers.compactMap { header -> KafkaHeader? in
            header.name.hasPrefix(headerPrefix) ? nil : KafkaHeader(name: header.name, value: header.value)
        }
        func add(_ name: String, _ value: String?) {
            if let value { headers.append(KafkaHeader(name: headerPrefix + name, string: value)) }
        }
        headers.append(KafkaHeader(name: Job.attemptsHeader, string: String(result.attempt)))
        add("reason", result.reason?.rawValue)
        add("detail", result.detail)
        add("worker", result.worker)
        add("message-id", result.messageId)
        add("source-topic", input.source.topic)
        add("source-partition", String(input.source.partition))
        add("source-offset", String(input.source.offset))
        add("failed-at", Clock.rfc3339(ms: result.finishedAtMs))
        return KafkaOutgoingRecord(topic: topic, key: input.key, value: input.value, headers: headers)
    }
}
