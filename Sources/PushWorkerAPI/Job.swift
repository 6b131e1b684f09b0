import Foundation
import Synchronization

/// One job handed to a ``Worker``: a validated background push and its context.
public struct Job: Sendable {
    /// The message id: the `apns-id` header when it is non-empty UTF-8 (at most
    /// 256 bytes, `PushHeaders.maxApnsIdBytes` in `PushWorkerCore`), or `<topic>-<partition>-<offset>`. It may hold any character,
    /// NUL included: a worker passing it on must keep or refuse it whole, never cut it.
    public var messageId: String {
        get { storage.fields.messageId ?? storage.fields.source.defaultMessageId }
        set { change { $0.messageId = newValue } }
    }
    /// The payload's `type` with all its bytes (a `\u0000` in it included), or `nil` when a default worker
    /// took a record without one.
    public var type: String? {
        get { storage.fields.type }
        set { change { $0.type = newValue } }
    }
    /// The raw record value: a UTF-8 JSON object (at most the payload limit, 4096 bytes by default).
    public var value: [UInt8] {
        get { storage.fields.value }
        set { change { $0.value = newValue } }
    }
    /// The ordering key, or `nil`.
    public var key: [UInt8]? {
        get { storage.fields.key }
        set { change { $0.key = newValue } }
    }
    /// The record's headers, in record order with duplicates kept: look one up by name with
    /// `headers["name"]`, `headers.bytes(named:)` or `headers.string(named:)` (the first of that name), or
    /// `headers.values(named:)` (all of them). Names are read up to their first NUL byte (librdkafka gives
    /// them as C strings); values are the exact bytes. See ``RecordHeaders``.
    public var headers: RecordHeaders {
        get { storage.fields.headers }
        set { change { $0.headers = newValue } }
    }
    /// Where the record came from.
    public var source: RecordSource {
        get { storage.fields.source }
        set {
            change { fields in
                // A default message id stays that of the source the job was made with.
                if fields.messageId == nil { fields.messageId = fields.source.defaultMessageId }
                fields.source = newValue
            }
        }
    }
    /// The W3C `traceparent` header's bytes, exactly as the record had them (at most
    /// 512 bytes, `PushHeaders.maxTraceparentBytes` in `PushWorkerCore`), or `nil` if it had none.
    public var traceparentHeader: [UInt8]? {
        get { storage.fields.traceparentHeader }
        set { change { $0.traceparentHeader = newValue } }
    }
    /// The `traceparent` header as UTF-8 text, or `nil` if the record had none or it is not UTF-8 (see
    /// ``traceparentHeader``). Setting it sets ``traceparentHeader`` to its UTF-8 bytes.
    public var traceparent: String? {
        get { traceparentHeader.flatMap { String(validating: $0, as: UTF8.self) } }
        set { traceparentHeader = newValue.map { Array($0.utf8) } }
    }
    /// The `traceparent` header parsed as W3C Trace Context level 1 (``TraceContext``: trace id, parent
    /// span id, flags), or `nil` when the record has no `traceparent` header or it is malformed (then
    /// start a new trace). Parsed on each use, from ``traceparentHeader``: the first `traceparent` header,
    /// if at most 512 bytes.
    public var traceContext: TraceContext? {
        traceparentHeader.flatMap { TraceContext(traceparent: $0) }
    }
    /// The run: 1 for the first; one more than the record's ``Job/attemptsHeader`` when it has one (a
    /// record redriven from the dead-letter topic).
    public var attempt: Int {
        get { storage.fields.attempt }
        set { change { $0.attempt = newValue } }
    }
    /// When the budget runs out, in milliseconds since the UNIX epoch (wall clock): the value exec workers
    /// get as `PUSHWORKER_DEADLINE_MS`. Set when the worker starts, from ``deadline``. A Swift worker should
    /// prefer ``deadline`` and ``remaining``: the wall clock can jump.
    public var deadlineMs: Int64
    /// When the budget runs out, on `ContinuousClock` (monotonic; it keeps counting while the machine
    /// sleeps): the worker's start plus its budget. Set when the worker starts; the task is cancelled at
    /// this instant. E.g. `try await Task.sleep(until: job.deadline, clock: .continuous)`.
    public var deadline: ContinuousClock.Instant
    /// The name of the worker running the job (the result's `worker` field, e.g. `swift:content-update`),
    /// set by the executor when the worker starts; `nil` before (or for a job built by hand and not run by
    /// a `BudgetedExecutor`).
    public package(set) var workerName: String?

    /// What the record gave the job, in one immutable box shared by the job's copies: the dispatcher and
    /// the executor's run each hold the job, and it is copied on its way, so a copy retains one object
    /// instead of every string and byte array. The box also keeps ``object``, decoded on first use. A
    /// change to one of these properties makes a new box (with nothing decoded yet). What the executor
    /// sets when the worker starts (``deadline``, ``deadlineMs``, ``workerName``) stays outside it. Not a
    /// ``SharedValues``: the decoded object lives in the same object, so a job costs one allocation.
    private struct Fields: Sendable {
        /// The message id, or `nil` for the default one of ``source``, made on each read of ``Job/messageId``
        /// (a running job then holds no string for it).
        var messageId: String?
        var type: String?
        var value: [UInt8]
        var key: [UInt8]?
        var headers: RecordHeaders
        var source: RecordSource
        var traceparentHeader: [UInt8]?
        var attempt: Int
    }

    private final class Storage: Sendable {
        let fields: Fields
        /// ``Job/object``, once decoded.
        let decoded = Mutex<[String: JSONValue]?>(nil)
        init(_ fields: Fields) { self.fields = fields }
    }

    private var storage: Storage

    /// Changes a copy of the boxed values and keeps it in a new box.
    private mutating func change(_ body: (inout Fields) -> Void) {
        var fields = storage.fields
        body(&fields)
        storage = Storage(fields)
    }

    /// Creates a job (the testing kit and tests build them by hand; the service builds them from records).
    /// - Parameters:
    ///   - headers: the record headers (default: none). They are kept as given; ``traceparent`` is a
    ///     separate parameter, as the service reads it from the headers before building the job.
    ///   - deadline: the deadline until a ``BudgetedExecutor`` starts the job and sets it from the
    ///     worker's budget (default: 30 s from now).
    public init(
        messageId: String,
        type: String?,
        value: [UInt8],
        key: [UInt8]? = nil,
        headers: RecordHeaders = [],
        source: RecordSource,
        traceparent: String? = nil,
        attempt: Int = 1,
        deadline: ContinuousClock.Instant = .now.advanced(by: .seconds(30))
    ) {
        self.init(
            messageId: messageId, type: type, value: value, key: key, headers: headers, source: source,
            traceparentHeader: traceparent.map { Array($0.utf8) }, attempt: attempt, notStartedAt: deadline, placeholderMs: WallClock.wallMs(at: deadline))
    }

    /// Creates a job with headers given as (name, value) pairs, the shape `headers` had before
    /// ``RecordHeaders`` (so `headers: [("apns-id", Array("m-1".utf8))]` keeps compiling); otherwise as
    /// ``init(messageId:type:value:key:headers:source:traceparent:attempt:deadline:)``.
    public init(
        messageId: String,
        type: String?,
        value: [UInt8],
        key: [UInt8]? = nil,
        headers: [(name: String, value: [UInt8]?)],
        source: RecordSource,
        traceparent: String? = nil,
        attempt: Int = 1,
        deadline: ContinuousClock.Instant = .now.advanced(by: .seconds(30))
    ) {
        self.init(messageId: messageId, type: type, value: value, key: key, headers: RecordHeaders(headers), source: source,
                  traceparent: traceparent, attempt: attempt, deadline: deadline)
    }

    /// The header that counts the runs a record has already had: `pushworker-attempts`, a decimal integer.
    /// pushworker writes it on dead-letter records, so a record redriven to an input topic runs as
    /// attempt N + 1. Absent, or not a non-negative integer: the run is attempt 1.
    public static let attemptsHeader = "pushworker-attempts"

    /// The attempt a record with `attemptsHeader` value `value` runs as: the value + 1, or 1 when it is
    /// absent or not a non-negative decimal integer below 1 000 000.
    package static func attempt(fromAttemptsHeader value: [UInt8]?) -> Int {
        guard let value, !value.isEmpty, value.count <= 6 else { return 1 }
        var runs = 0
        for byte in value {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return 1 }
            runs = runs * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return runs + 1
    }

    /// The time left in the budget on `ContinuousClock`: from now to ``deadline``, zero once it has passed.
    /// Read on each use. Size I/O timeouts from it, e.g. `min(ownTimeout, job.remaining)`.
    public var remaining: Duration {
        max(.zero, ContinuousClock.now.duration(to: deadline))
    }

    /// The payload as a JSON object: `aps`, `type` and the job's data keys, at any nesting the validator
    /// accepts (up to `PayloadValidator.maxNestingDepth` levels, cJSON's nesting limit; `PushWorkerCore`). Decoded on first use and kept.
    public var object: [String: JSONValue] {
        if let cached = storage.decoded.withLock({ $0 }) { return cached }
        // The value was validated as a JSON object before the job was built. Foundation's decoder stops at
        // 512 levels of nesting (a push may have up to PayloadValidator.maxNestingDepth): deeper values are
        // read by JSONValue.parse.
        let decoded = (try? JSONDecoder().decode([String: JSONValue].self, from: Data(value)))
            ?? JSONValue.parse(value)?.objectValue ?? [:]
        storage.decoded.withLock { $0 = decoded }
        return decoded
    }

    /// Decodes the payload into `T` with Foundation's `JSONDecoder`.
    /// - Throws: `DecodingError` when the payload does not match `T`, or nests more than 512 levels deep
    ///   (`JSONDecoder`'s own limit; ``object`` reads deeper payloads).
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(value))
    }

    /// The first header named `name` as a UTF-8 string, or `nil` (absent, null, or not UTF-8: read
    /// ``headers`` for the bytes). The same as `headers.string(named: name)`.
    public func header(_ name: String) -> String? {
        headers.string(named: name)
    }

    /// The label of ``logger``: `pushworker.worker`. The worker's name is in the `worker` metadata key,
    /// so one label covers every worker and a line can still be told apart by worker.
    public static let loggerLabel = "pushworker.worker"

    /// A logger for the worker's own lines about this job: label ``loggerLabel``, carrying the metadata
    /// `messageId`, `type` (empty when the job has none, as in pushworker's own lines), `topic`,
    /// `partition`, `offset`, `attempt` and, once the worker has started, `worker` (``workerName``). Each
    /// line's own metadata is merged in and wins over these keys. It writes through the process-wide
    /// ``PushWorkerLogHandler`` at the process-wide level, like every ``PushWorkerLogger``.
    ///
    /// Built on each use from the job's current fields (nothing is built for a job whose worker never
    /// reads it): keep it in a local when logging several lines, e.g. `let logger = job.logger`.
    public var logger: PushWorkerLogger {
        var metadata: PushWorkerLogger.Metadata = [
            "messageId": messageId, "type": type ?? "", "topic": source.topic,
            "partition": String(source.partition), "offset": String(source.offset), "attempt": String(attempt),
        ]
        if let workerName { metadata["worker"] = workerName }
        return PushWorkerLogger(label: Self.loggerLabel, metadata: metadata)
    }

    /// A job whose deadline is set later, by the executor when its worker starts (no clock reads here:
    /// this is on the per-record path). A `messageId` of `nil` is the default one of `source`,
    /// `<topic>-<partition>-<offset>` (``RecordSource/defaultMessageId``), made when it is read.
    package init(messageId: String?, type: String?, value: [UInt8], key: [UInt8]?, headers: RecordHeaders,
         source: RecordSource, traceparentHeader: [UInt8]?, attempt: Int, notStartedAt placeholder: ContinuousClock.Instant, placeholderMs: Int64) {
        self.storage = Storage(Fields(
            messageId: messageId, type: type, value: value, key: key, headers: headers, source: source,
            traceparentHeader: traceparentHeader, attempt: attempt))
        self.deadline = placeholder
        self.deadlineMs = placeholderMs
        self.workerName = nil
    }

    /// Sets the deadline and, when given, ``workerName`` (called by the executor when the worker starts).
    package mutating func start(budget: Duration, at start: ContinuousClock.Instant, worker: String? = nil) {
        deadline = start.advanced(by: budget)
        deadlineMs = WallClock.wallMs(at: deadline)
        if let worker { workerName = worker }
    }
}
