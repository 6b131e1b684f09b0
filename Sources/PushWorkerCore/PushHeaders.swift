/// The headers pushworker reads from an input record (contract section 1), as raw bytes, with their size
/// bounds.
///
/// - The first header with a given name counts (the last for `pushworker-attempts`); later ones are left to the worker (``Job/headers``). A
///   header with a null value counts as absent.
/// - Values are kept byte for byte, UTF-8 or not: `apns-id` and `traceparent` are copied to the result
///   record unchanged.
/// - `apns-id` may be at most ``maxApnsIdBytes`` bytes, `traceparent` at most ``maxTraceparentBytes`` and
///   `apns-collapse-id` at most ``maxCollapseIdBytes``; a longer one is not kept (not copied to the result,
///   not the message id, not collapsed on) and the record is `failed` / `invalidPayload` with a detail
///   naming the header and both sizes (``problem``).
/// - Header names come from librdkafka's `rd_kafka_header_get_all` as C strings, so a name is read up to
///   its first NUL byte; values carry their length and are exact.
public struct PushHeaders: Sendable, Hashable {
    /// The longest `apns-id` kept, in bytes: 256. APNs's own `apns-id` is a 36-character UUID.
    public static let maxApnsIdBytes = 256
    /// The longest `traceparent` kept, in bytes: 512. W3C Trace Context version `00` is 55 characters.
    public static let maxTraceparentBytes = 512
    /// The longest `apns-collapse-id` kept, in bytes: 64, APNs's own limit for the header.
    public static let maxCollapseIdBytes = 64

    /// The `apns-id` header's bytes, or `nil` when absent or longer than ``maxApnsIdBytes``.
    public var apnsId: [UInt8]?
    /// The `apns-expiration` header's bytes, or `nil` when absent (``APNsExpiration`` parses them).
    public var apnsExpiration: [UInt8]?
    /// The `traceparent` header's bytes, or `nil` when absent or longer than ``maxTraceparentBytes``.
    public var traceparent: [UInt8]?
    /// The `apns-collapse-id` header's bytes, or `nil` when absent, empty or longer than
    /// ``maxCollapseIdBytes``. Records of one key waiting with the same collapse id are collapsed: only the
    /// newest runs (``JobDispatcher``).
    public var apnsCollapseId: [UInt8]?
    /// The run this record is (``Job/attemptsHeader``, the last such header): 1 unless the record carries
    /// `pushworker-attempts`.
    public var attempt: Int
    /// The `pushworker-not-before` time (``NotBefore``), or `nil` when absent. A malformed value is a
    /// ``problem``.
    public var notBefore: NotBefore?
    /// The `pushworker-message-id` header's bytes (at most ``maxApnsIdBytes``), or `nil`: the message id
    /// pushworker carries on records it writes to the retry topic for inputs without an `apns-id`
    /// (``messageId(fallback:trustingCarried:)``).
    public var carriedMessageId: [UInt8]?
    /// The input position in the `pushworker-source-topic`, `-partition` and `-offset` headers, when all
    /// three are present and well formed, else `nil`: where a record in the retry topic was first read.
    public var carriedOrigin: RecordSource?
    /// Why the headers make the record `failed` / `invalidPayload` (a header over its bound, a malformed
    /// `pushworker-not-before`), or `nil`.
    public var problem: String?

    /// The name of the header with the message id of a record pushworker writes to the retry topic.
    public static let messageIdHeader = "pushworker-message-id"
    /// The name of the header with the topic a record in the retry or dead-letter topic was first read from.
    public static let sourceTopicHeader = "pushworker-source-topic"
    /// The name of the header with the partition a record in the retry or dead-letter topic was first read from.
    public static let sourcePartitionHeader = "pushworker-source-partition"
    /// The name of the header with the offset a record in the retry or dead-letter topic was first read from.
    public static let sourceOffsetHeader = "pushworker-source-offset"

    /// Reads the headers of one record.
    public init(_ headers: RecordHeaders) {
        var apnsId: [UInt8]??
        var apnsExpiration: [UInt8]??
        var traceparent: [UInt8]??
        var collapseId: [UInt8]??
        var attempts: [UInt8]??
        var notBefore: [UInt8]??
        var carriedId: [UInt8]??
        var sourceTopic: [UInt8]??
        var sourcePartition: [UInt8]??
        var sourceOffset: [UInt8]??
        for header in headers {
            switch header.name {
            case "apns-id" where apnsId == nil: apnsId = .some(header.value)
            case "apns-expiration" where apnsExpiration == nil: apnsExpiration = .some(header.value)
            case "traceparent" where traceparent == nil: traceparent = .some(header.value)
            case "apns-collapse-id" where collapseId == nil: collapseId = .some(header.value)
            case Job.attemptsHeader: attempts = .some(header.value)  // the last one, as pushworker writes one
            case NotBefore.header where notBefore == nil: notBefore = .some(header.value)
            case Self.messageIdHeader where carriedId == nil: carriedId = .some(header.value)
            case Self.sourceTopicHeader where sourceTopic == nil: sourceTopic = .some(header.value)
            case Self.sourcePartitionHeader where sourcePartition == nil: sourcePartition = .some(header.value)
            case Self.sourceOffsetHeader where sourceOffset == nil: sourceOffset = .some(header.value)
            default: break
            }
        }
        self.apnsExpiration = apnsExpiration ?? nil
        self.attempt = Job.attempt(fromAttemptsHeader: attempts ?? nil)
        var problems: [String] = []
        func bounded(_ value: [UInt8]??, _ name: String, _ limit: Int, _ consequence: String = "it is not copied to the result") -> [UInt8]? {
            guard let value = value ?? nil else { return nil }
            guard value.count <= limit else {
                problems.append("the \(name) header is \(value.count) bytes; the limit is \(limit) bytes (\(consequence))")
                return nil
            }
            return value
        }
        self.apnsId = bounded(apnsId, "apns-id", Self.maxApnsIdBytes)
        self.traceparent = bounded(traceparent, "traceparent", Self.maxTraceparentBytes)
        let collapse = bounded(collapseId, "apns-collapse-id", Self.maxCollapseIdBytes, "APNs's limit; the record is not collapsed")
        self.apnsCollapseId = collapse?.isEmpty == true ? nil : collapse
        if let value = notBefore ?? nil {
            if let parsed = NotBefore(header: value) {
                self.notBefore = parsed
            } else {
                problems.append("the \(NotBefore.header) header \(PayloadValidator.describeHeader(value)) is neither UNIX milliseconds (decimal digits) nor an RFC 3339 date-time with a time zone (e.g. 2026-12-01T21:00:00Z)")
            }
        }
        if let id = carriedId ?? nil, !id.isEmpty, id.count <= Self.maxApnsIdBytes { self.carriedMessageId = id }
        if let topic = (sourceTopic ?? nil).flatMap({ String(validating: $0, as: UTF8.self) }), !topic.isEmpty,
           let partition = (sourcePartition ?? nil).flatMap(Self.decimal), partition <= Int64(Int32.max),
           let offset = (sourceOffset ?? nil).flatMap(Self.decimal) {
            self.carriedOrigin = RecordSource(topic: topic, partition: Int32(partition), offset: offset)
        }
        self.problem = problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    /// A non-negative decimal number of at most 18 digits, or `nil`.
    private static func decimal(_ value: [UInt8]) -> Int64? {
        guard !value.isEmpty, value.count <= 18 else { return nil }
        var number: Int64 = 0
        for byte in value {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            number = number * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        return number
    }

    /// The message id (contract section 1): the `apns-id` when it is non-empty UTF-8, else `fallback`
    /// (`<topic>-<partition>-<offset>`). An `apns-id` that is not UTF-8 is still copied to the result's
    /// headers byte for byte; only the JSON `messageId` (and a worker's ``Job/messageId``) falls back.
    public func messageId(fallback: @autoclosure () -> String) -> String {
        messageId(fallback: fallback(), trustingCarried: false)
    }

    /// The message id as ``messageId(fallback:)`` gives it, but for a record read from the retry topic
    /// (`trustingCarried`): there, without an `apns-id`, the ``carriedMessageId`` pushworker wrote (the
    /// first attempt's id) comes before `fallback`, so every attempt of a record reports one message id.
    public func messageId(fallback: @autoclosure () -> String, trustingCarried: Bool) -> String {
        messageIdFromHeaders(trustingCarried: trustingCarried) ?? fallback()
    }

    /// The message id as ``messageId(fallback:trustingCarried:)`` gives it when the headers give one (an
    /// `apns-id`, or for a record read from the retry topic the carried id), else `nil`: the caller's
    /// fallback applies.
    package func messageIdFromHeaders(trustingCarried: Bool) -> String? {
        if let apnsId, !apnsId.isEmpty, let text = String(validating: apnsId, as: UTF8.self) { return text }
        if trustingCarried, let carried = carriedMessageId, let text = String(validating: carried, as: UTF8.self) { return text }
        return nil
    }
}
