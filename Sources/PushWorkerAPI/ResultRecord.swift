/// One result (contract section 3): what happened to one input record.
///
/// ``jsonBytes()`` is the exact value written to the results topic. ``key`` and the `apns-id` /
/// `traceparent` headers (``apnsIdHeader``, ``traceparentHeader``, byte for byte) go on the Kafka record
/// beside it.
public struct ResultRecord: Sendable, Hashable {
    /// The `apns-id` when it is non-empty UTF-8, or `<topic>-<partition>-<offset>` (`PushHeaders.messageId(fallback:)` (PushWorkerCore)).
    public var messageId: String {
        get { storage.values.messageId }
        set { storage.change { $0.messageId = newValue } }
    }
    /// The payload's `type`, or `nil` when it had none (or the value was not readable).
    public var type: String? {
        get { storage.values.type }
        set { storage.change { $0.type = newValue } }
    }
    /// `newData`, `noData` or `failed`.
    public var result: BackgroundFetchResult {
        get { storage.values.result }
        set { storage.change { $0.result = newValue } }
    }
    /// pushworker's reason or the worker's, or `nil`.
    public var reason: ResultReason? {
        get { storage.values.reason }
        set { storage.change { $0.reason = newValue } }
    }
    /// Human-readable detail (error text, exit status, HTTP status), or `nil`.
    public var detail: String? {
        get { storage.values.detail }
        set { storage.change { $0.detail = newValue } }
    }
    /// The worker that ran, or `nil` if none ran.
    public var worker: String? {
        get { storage.values.worker }
        set { storage.change { $0.worker = newValue } }
    }
    /// 1 for the first run.
    public var attempt: Int {
        get { storage.values.attempt }
        set { storage.change { $0.attempt = newValue } }
    }
    /// Whether another attempt of this record follows (its failure is retryable and its retry policy has
    /// attempts left): a reader need not alarm on a `failed` result that will run again. Default `false`.
    public var willRetry: Bool {
        get { storage.values.willRetry }
        set { storage.change { $0.willRetry = newValue } }
    }
    /// The topic, partition and offset the record was read from: the input topic's, or the retry topic's
    /// for a record that waited there (a retry or a scheduled push).
    public var source: RecordSource {
        get { storage.values.source }
        set { storage.change { $0.source = newValue } }
    }
    /// The position of the record as first written to an input topic, when it differs from ``source``
    /// (the record came through the retry topic), else `nil`. In the JSON value only when set.
    public var origin: RecordSource? {
        get { storage.values.origin }
        set { storage.change { $0.origin = newValue } }
    }
    /// When the record was taken, UNIX milliseconds.
    public var receivedAtMs: Int64 {
        get { storage.values.receivedAtMs }
        set { storage.change { $0.receivedAtMs = newValue } }
    }
    /// When the worker started, UNIX milliseconds, or `nil` if no worker ran.
    public var startedAtMs: Int64? {
        get { storage.values.startedAtMs }
        set { storage.change { $0.startedAtMs = newValue } }
    }
    /// When the result was decided, UNIX milliseconds.
    public var finishedAtMs: Int64 {
        get { storage.values.finishedAtMs }
        set { storage.change { $0.finishedAtMs = newValue } }
    }
    /// The worker's run time in milliseconds (0 if it did not run).
    public var durationMs: Double {
        get { storage.values.durationMs }
        set { storage.change { $0.durationMs = newValue } }
    }
    /// The input's key (the result record is keyed by it); not part of the JSON value.
    public var key: [UInt8]? {
        get { storage.values.key }
        set { storage.change { $0.key = newValue } }
    }
    /// The input's `apns-id` header bytes, copied to the result's headers unchanged (UTF-8 or not), or `nil`
    /// when the input had none or one over `PushHeaders.maxApnsIdBytes` (PushWorkerCore); not part of the JSON value.
    public var apnsIdHeader: [UInt8]? {
        get { storage.values.apnsIdHeader }
        set { storage.change { $0.apnsIdHeader = newValue } }
    }
    /// The input's W3C `traceparent` header bytes, copied to the result's headers unchanged, or `nil` when
    /// the input had none or one over `PushHeaders.maxTraceparentBytes` (PushWorkerCore); not part of the JSON value.
    public var traceparentHeader: [UInt8]? {
        get { storage.values.traceparentHeader }
        set { storage.change { $0.traceparentHeader = newValue } }
    }

    /// The stored values, in one immutable shared box. A result is copied several times on its way from
    /// the dispatcher through the publisher to its delivery report (in output enums, batches and in-flight
    /// tables); a copy then retains one object instead of each of its strings and byte arrays (retain and
    /// release were about a quarter of pushworker's CPU samples under `perf` before). A change, rare after
    /// the result is made (a retry's note), makes a new box.
    private struct Fields: Sendable, Hashable {
        var messageId: String
        var type: String?
        var result: BackgroundFetchResult
        var reason: ResultReason?
        var detail: String?
        var worker: String?
        var attempt: Int
        var willRetry: Bool
        var source: RecordSource
        var origin: RecordSource?
        var receivedAtMs: Int64
        var startedAtMs: Int64?
        var finishedAtMs: Int64
        var durationMs: Double
        var key: [UInt8]?
        var apnsIdHeader: [UInt8]?
        var traceparentHeader: [UInt8]?
    }

    private var storage: SharedValues<Fields>

    /// Whether two results have the same values (every property above).
    public static func == (lhs: ResultRecord, rhs: ResultRecord) -> Bool {
        lhs.storage.isSameObject(as: rhs.storage) || lhs.storage.values == rhs.storage.values
    }

    /// Hashes every property, as `==` compares them.
    public func hash(into hasher: inout Hasher) { hasher.combine(storage.values) }

    /// Whether the result carries an `apns-id` header (``apnsIdHeader`` is set).
    public var hasApnsId: Bool { apnsIdHeader != nil }
    /// ``traceparentHeader`` as UTF-8 text, or `nil` when absent or not UTF-8 (e.g. for log metadata).
    public var traceparent: String? { traceparentHeader.flatMap { String(validating: $0, as: UTF8.self) } }

    /// Creates a result.
    /// - Parameters:
    ///   - apnsIdHeader: the input's `apns-id` header bytes to copy to the result's headers, or `nil`.
    ///   - traceparentHeader: the input's `traceparent` header bytes to copy, or `nil`.
    public init(
        messageId: String, type: String?, result: BackgroundFetchResult, reason: ResultReason?, detail: String?,
        worker: String?, attempt: Int = 1, source: RecordSource, receivedAtMs: Int64, startedAtMs: Int64?,
        finishedAtMs: Int64, durationMs: Double, key: [UInt8]? = nil, apnsIdHeader: [UInt8]? = nil, traceparentHeader: [UInt8]? = nil,
        willRetry: Bool = false, origin: RecordSource? = nil
    ) {
        storage = SharedValues(Fields(
            messageId: messageId, type: type, result: result, reason: reason, detail: detail, worker: worker,
            attempt: attempt, willRetry: willRetry, source: source, origin: origin, receivedAtMs: receivedAtMs,
            startedAtMs: startedAtMs, finishedAtMs: finishedAtMs, durationMs: durationMs, key: key,
            apnsIdHeader: apnsIdHeader, traceparentHeader: traceparentHeader))
    }

    /// The JSON value of the result record, UTF-8, keys in contract order:
    /// `messageId, type, result, reason, detail, worker, attempt, willRetry, source{topic,partition,offset},
    /// origin{topic,partition,offset} (only when ``origin`` is set), receivedAt, startedAt, finishedAt,
    /// durationMs`. Timestamps are RFC 3339 UTC with milliseconds;
    /// `durationMs` has microsecond precision.
    public func jsonBytes() -> [UInt8] {
        var out = JSONWriter()
        out.raw("{\"messageId\":"); out.string(messageId)
        out.raw(",\"type\":"); out.optionalString(type)
        out.raw(",\"result\":\""); out.raw(result.rawValue); out.raw("\"")
        out.raw(",\"reason\":"); out.optionalString(reason?.rawValue)
        out.raw(",\"detail\":"); out.optionalString(detail)
        out.raw(",\"worker\":"); out.optionalString(worker)
        out.raw(",\"attempt\":"); out.integer(Int64(attempt))
        out.raw(willRetry ? ",\"willRetry\":true" : ",\"willRetry\":false")
        out.raw(",\"source\":{\"topic\":"); out.string(source.topic)
        out.raw(",\"partition\":"); out.integer(Int64(source.partition))
        out.raw(",\"offset\":"); out.integer(source.offset)
        if let origin {
            out.raw("},\"origin\":{\"topic\":"); out.string(origin.topic)
            out.raw(",\"partition\":"); out.integer(Int64(origin.partition))
            out.raw(",\"offset\":"); out.integer(origin.offset)
        }
        out.raw("},\"receivedAt\":"); out.timestamp(receivedAtMs)
        out.raw(",\"startedAt\":")
        if let startedAtMs { out.timestamp(startedAtMs) } else { out.raw("null") }
        out.raw(",\"finishedAt\":"); out.timestamp(finishedAtMs)
        out.raw(",\"durationMs\":")
        if durationMs.isFinite, durationMs > 0 { out.raw(Self.formatDuration(durationMs)) } else { out.raw("0") }
        out.raw("}")
        return out.bytes
    }

    /// The longest worker-defined `reason` kept, in UTF-8 bytes (256); longer ones are cut (see ``truncated(_:toBytes:)``).
    public static let maxReasonBytes = 256
    /// The longest worker-defined `detail` kept, in UTF-8 bytes (2048). Together with the payload limit this
    /// keeps every result record far below librdkafka's `message.max.bytes`, so a worker's output can never
    /// make a result unproducible (which would hold back every later result of its partition).
    public static let maxDetailBytes = 2048

    /// `text` cut to at most `limit` UTF-8 bytes on a character boundary, ending in `…` when cut.
    public static func truncated(_ text: String, toBytes limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        let ellipsis = "…"
        var result = ""
        var used = 0
        let budget = max(0, limit - ellipsis.utf8.count)
        for character in text {
            let size = character.utf8.count
            if used + size > budget { break }
            result.append(character)
            used += size
        }
        return result + ellipsis
    }

    /// A duration in milliseconds as the result's `durationMs` writes it: at most three decimals, no
    /// trailing zeros, `0` for anything not positive and finite.
    public static func formatDuration(_ ms: Double) -> String {
        guard ms.isFinite, ms > 0 else { return "0" }
        let micros = (ms * 1000).rounded()
        let whole = Int64(micros) / 1000
        let fraction = Int64(micros) % 1000
        if fraction == 0 { return String(whole) }
        var text = String(fraction)
        text = String(repeating: "0", count: 3 - text.count) + text
        while text.hasSuffix("0") { text.removeLast() }
        return "\(whole).\(text)"
    }
}
