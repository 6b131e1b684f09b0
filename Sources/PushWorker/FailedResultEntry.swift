import PushWorkerCore

/// A row of the status page's table of recent `failed` results (`failures[]` in `/status.json`): what
/// the result record says, never the payload, the record's key or its headers.
struct FailedResultEntry: Sendable, Equatable, Codable {
    /// When the result was made: milliseconds since 1970 (UTC).
    var atMs: Int64
    /// The result's `messageId` (the `apns-id`, or `topic:partition:offset`).
    var messageId: String
    /// The payload's `type`, or `nil` when it had none (or could not be read).
    var type: String?
    /// The result's `reason`, e.g. `invalidPayload`, `workerError`, `timeout`.
    var reason: String?
    /// The result's `detail`, cut to ``detailLimit`` characters: the text the results topic carries too.
    var detail: String?
    /// Where the record was read: topic, partition, offset.
    var topic: String
    /// The source partition.
    var partition: Int32
    /// The source offset.
    var offset: Int64
    /// Whether it runs again (a retryable failure with attempts left).
    var willRetry: Bool

    /// The most characters of a `detail` kept: 300.
    static let detailLimit = 300

    /// The row of `result`.
    init(_ result: ResultRecord) {
        atMs = result.finishedAtMs
        messageId = result.messageId
        type = result.type
        reason = result.reason?.rawValue
        detail = result.detail.map { $0.count > Self.detailLimit ? String($0.prefix(Self.detailLimit)) + "…" : $0 }
        topic = result.source.topic
        partition = result.source.partition
        offset = result.source.offset
        willRetry = result.willRetry
    }
}
