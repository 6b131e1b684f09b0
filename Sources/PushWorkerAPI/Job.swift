import Foundation
import Synchronization

/// One job handed to a ``Worker``: a validated background push and its context.
public struct Job: Sendable {
    /// The message id: the `apns-id` header when it is non-empty UTF-8 (at most
    /// 256 bytes, `PushHeaders.maxApnsIdBytes` in `PushWorkerCore`), or `<topic>-<partition>-<offset>`. It may hold any character,
    /// NUL included: a worker passing it on must keep or refuse it whole, never cut it.
    public var messageId: String
    /// The payload's `type` with all its bytes (a `\u0000` in it included), or `nil` when a default worker
    /// took a record without one.
    public var type: String?
    /// The raw record value: a UTF-8 JSON object (at most the payload limit, 4096 bytes by default).
    public var value: [UInt8]
    /// The ordering key, or `nil`.
    public var key: [UInt8]?
    /// The record headers.
    public var headers: [(name: String, value: [UInt8]?)]
    /// Where the record came from.
    public var source: RecordSource
    /// The W3C `traceparent` header's bytes, exactly as the record had them (at most
    /// 512 bytes, `PushHeaders.maxTraceparentBytes` in `PushWorkerCore`), or `nil` if it had none.
    public var traceparentHeader: [UInt8]?
    /// The `traceparent` header as UTF-8 text, or `nil` if the record had none or it is not UTF-8 (see
    /// ``traceparentHeader``). Setting it sets ``traceparentHeader`` to its UTF-8 bytes.
    public var traceparent: String? {
        get { traceparentHeader.flatMap { String(validating: $0, as: UTF8.self) } }
        set { traceparentHeader = newValue.map { Array($0.utf8) } }
    }
    /// The `traceparent` header parsed as W3C Trace Context (``TraceContext``), or `nil` if absent or
    /// malformed. Parsed on each use.
    public var traceContext: TraceContext? {
        traceparentHeader.flatMap { TraceContext(traceparent: $0) }
    }
    /// The run: 1 for the first; one more than the record's ``Job/attemptsHeader`` when it has one (a
    /// record redriven from the dead-letter topic).
    public var attempt: Int
    /// When the budget runs out, in milliseconds since the UNIX epoch. Set when the worker starts.
    public var deadlineMs: Int64
    /// When the budget runs out, on the monotonic clock. Set when the worker starts.
    public var deadline: ContinuousClock.Instant
    private let parsed: ParsedObject

    /// Creates a job (the testing kit and tests build them by hand; the service builds them from records).
    /// - Parameter deadline: the deadline until a ``BudgetedExecutor`` starts the job and sets it from the
    ///   worker's budget (default: 30 s from now).
    public init(
        messageId: String,
        type: String?,
        value: [UInt8],
        key: [UInt8]? = nil,
        headers: [(name: String, value: [UInt8]?)] = [],
        source: RecordSource,
        traceparent: String? = nil,
        attempt: Int = 1,
        deadline: ContinuousClock.Instant = .now.advanced(by: .seconds(30))
    ) {
        self.init(
            messageId: messageId, type: type, value: value, key: key, headers: headers, source: source,
            traceparentHeader: traceparent.map { Array($0.utf8) }, attempt: attempt, notStartedAt: deadline, placeholderMs: WallClock.wallMs(at: deadline))
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

    /// The time left in the budget (zero once the deadline has passed). Size I/O timeouts from it.
    public var remaining: Duration {
        max(.zero, ContinuousClock.now.duration(to: deadline))
    }

    /// The payload as a JSON object: `aps`, `type` and the job's data keys, at any nesting the validator
    /// accepts (up to `PayloadValidator.maxNestingDepth` levels, cJSON's nesting limit; `PushWorkerCore`). Decoded on first use and kept.
    public var object: [String: JSONValue] { parsed.object(of: value) }

    /// Decodes the payload into `T` with Foundation's `JSONDecoder`.
    /// - Throws: `DecodingError` when the payload does not match `T`, or nests more than 512 levels deep
    ///   (`JSONDecoder`'s own limit; ``object`` reads deeper payloads).
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(value))
    }

    /// The first header named `name` as a UTF-8 string, or `nil` (absent, null, or not UTF-8: read
    /// ``headers`` for the bytes).
    public func header(_ name: String) -> String? {
        for header in headers where header.name == name {
            return header.value.flatMap { String(validating: $0, as: UTF8.self) }
        }
        return nil
    }

    /// A job whose deadline is set later, by the executor when its worker starts (no clock reads here:
    /// this is on the per-record path).
    package init(messageId: String, type: String?, value: [UInt8], key: [UInt8]?, headers: [(name: String, value: [UInt8]?)],
         source: RecordSource, traceparentHeader: [UInt8]?, attempt: Int, notStartedAt placeholder: ContinuousClock.Instant, placeholderMs: Int64) {
        self.messageId = messageId
        self.type = type
        self.value = value
        self.key = key
        self.headers = headers
        self.source = source
        self.traceparentHeader = traceparentHeader
        self.attempt = attempt
        self.deadline = placeholder
        self.deadlineMs = placeholderMs
        self.parsed = ParsedObject()
    }

    /// Sets the deadline (called by the executor when the worker starts).
    package mutating func start(budget: Duration, at start: ContinuousClock.Instant) {
        deadline = start.advanced(by: budget)
        deadlineMs = WallClock.wallMs(at: deadline)
    }
}

/// The lazily decoded payload object of a job, shared by copies of the job.
final class ParsedObject: Sendable {
    private let cache = Mutex<[String: JSONValue]?>(nil)

    func object(of value: [UInt8]) -> [String: JSONValue] {
        if let cached = cache.withLock({ $0 }) { return cached }
        // The value was validated as a JSON object before the job was built. Foundation's decoder stops at
        // 512 levels of nesting (a push may have up to PayloadValidator.maxNestingDepth): deeper values are
        // read by JSONValue.parse.
        let decoded = (try? JSONDecoder().decode([String: JSONValue].self, from: Data(value)))
            ?? JSONValue.parse(value)?.objectValue ?? [:]
        cache.withLock { $0 = decoded }
        return decoded
    }
}
