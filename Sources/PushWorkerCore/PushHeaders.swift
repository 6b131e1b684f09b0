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
    /// Why the headers make the record `failed` / `invalidPayload` (a header over its bound), or `nil`.
    public var problem: String?

    /// Reads the headers of one record.
    public init(_ headers: RecordHeaders) {
        var apnsId: [UInt8]??
        var apnsExpiration: [UInt8]??
        var traceparent: [UInt8]??
        var collapseId: [UInt8]??
        var attempts: [UInt8]??
        for header in headers {
            switch header.name {
            case "apns-id" where apnsId == nil: apnsId = .some(header.value)
            case "apns-expiration" where apnsExpiration == nil: apnsExpiration = .some(header.value)
            case "traceparent" where traceparent == nil: traceparent = .some(header.value)
            case "apns-collapse-id" where collapseId == nil: collapseId = .some(header.value)
            case Job.attemptsHeader: attempts = .some(header.value)  // the last one, as pushworker writes one
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
        self.problem = problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    /// The message id (contract section 1): the `apns-id` when it is non-empty UTF-8, else `fallback`
    /// (`<topic>-<partition>-<offset>`). An `apns-id` that is not UTF-8 is still copied to the result's
    /// headers byte for byte; only the JSON `messageId` (and a worker's ``Job/messageId``) falls back.
    public func messageId(fallback: @autoclosure () -> String) -> String {
        if let apnsId, !apnsId.isEmpty, let text = String(validating: apnsId, as: UTF8.self) { return text }
        return fallback()
    }
}
