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
package enum DeadLetterRecord {
    /// The prefix of the headers pushworker adds.
    package static let headerPrefix = "pushworker-"

    /// The names of the headers pushworker adds, as written here and read by `pushworker redrive`.
    package enum Header {
        package static let attempts = Job.attemptsHeader
        package static let reason = "pushworker-reason"
        package static let detail = "pushworker-detail"
        package static let worker = "pushworker-worker"
        package static let messageId = PushHeaders.messageIdHeader
        package static let sourceTopic = PushHeaders.sourceTopicHeader
        package static let sourcePartition = PushHeaders.sourcePartitionHeader
        package static let sourceOffset = PushHeaders.sourceOffsetHeader
        package static let failedAt = "pushworker-failed-at"
        /// On a stub dead letter (``DeadLetterRecord/stub(of:dropKey:error:)``): librdkafka's name of the
        /// error that refused the full dead letter, e.g. `MSG_SIZE_TOO_LARGE`.
        package static let droppedBecause = "pushworker-dropped-because"
        /// On a stub: the size in bytes of the dropped value (absent when the value was null).
        package static let droppedValueBytes = "pushworker-dropped-value-bytes"
        /// On a stub: how many headers were dropped (the input's own, and pushworker's longer than
        /// ``DeadLetterRecord/stubHeaderValueLimit``).
        package static let droppedHeaders = "pushworker-dropped-headers"
        /// On a stub: the bytes of the dropped headers (names and values).
        package static let droppedHeadersBytes = "pushworker-dropped-headers-bytes"
        /// On a stub without its key: the size in bytes of the dropped key.
        package static let droppedKeyBytes = "pushworker-dropped-key-bytes"
    }

    /// The longest `pushworker-*` header value a stub dead letter keeps: 1024 bytes (a longer
    /// `pushworker-detail` or `pushworker-message-id` is dropped and counted).
    static let stubHeaderValueLimit = 1024

    /// The stub that replaces dead letter `letter` when the broker or librdkafka can never take it (it is
    /// larger than `message.max.bytes`, or otherwise refused as a record): the same topic and key (unless
    /// `dropKey`), a null value, only pushworker's own headers (source topic, partition and offset, reason,
    /// attempts, …; each at most ``stubHeaderValueLimit`` bytes), plus ``Header/droppedBecause`` (`error`)
    /// and the sizes of what was dropped (``Header/droppedValueBytes``, ``Header/droppedHeaders``,
    /// ``Header/droppedHeadersBytes``, ``Header/droppedKeyBytes``). Headers of an earlier stub are not
    /// counted as dropped. `nil` when the stub would be the same record as `letter` (nothing to drop).
    static func stub(of letter: KafkaOutgoingRecord, dropKey: Bool, error: String) -> KafkaOutgoingRecord? {
        let dropped: Set<String> = [Header.droppedBecause, Header.droppedValueBytes, Header.droppedHeaders, Header.droppedHeadersBytes, Header.droppedKeyBytes]
        var kept: [KafkaHeader] = []
        var droppedCount = 0
        var droppedBytes = 0
        var earlier: [String: KafkaHeader] = [:]
        for header in letter.headers {
            if dropped.contains(header.name) {
                earlier[header.name] = header
            } else if header.name.hasPrefix(headerPrefix) && (header.value?.count ?? 0) <= stubHeaderValueLimit {
                kept.append(header)
            } else {
                droppedCount += 1
                droppedBytes += header.name.utf8.count + (header.value?.count ?? 0)
            }
        }
        let dropsKey = dropKey && letter.key != nil
        guard letter.value != nil || droppedCount > 0 || dropsKey else { return nil }
        func count(_ name: String, _ added: Int) -> String {
            let before = earlier[name]?.value.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
            return String(before + added)
        }
        kept.append(KafkaHeader(name: Header.droppedBecause, string: error))
        if let value = letter.value {
            kept.append(KafkaHeader(name: Header.droppedValueBytes, string: String(value.count)))
        } else if let before = earlier[Header.droppedValueBytes] {
            kept.append(before)
        }
        kept.append(KafkaHeader(name: Header.droppedHeaders, string: count(Header.droppedHeaders, droppedCount)))
        kept.append(KafkaHeader(name: Header.droppedHeadersBytes, string: count(Header.droppedHeadersBytes, droppedBytes)))
        if dropsKey, let key = letter.key {
            kept.append(KafkaHeader(name: Header.droppedKeyBytes, string: String(key.count)))
        }
        return KafkaOutgoingRecord(topic: letter.topic, partition: letter.partition, key: dropsKey ? nil : letter.key, value: nil, headers: kept)
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
        // A record that came through the retry topic names where it was first read: redrive sends it there.
        let source = result.origin ?? input.source
        add(Header.sourceTopic, source.topic)
        add(Header.sourcePartition, String(source.partition))
        add(Header.sourceOffset, String(source.offset))
        add(Header.failedAt, WallClock.rfc3339(ms: result.finishedAtMs))
        return KafkaOutgoingRecord(topic: topic, key: input.key, value: input.value, headers: headers)
    }
}
