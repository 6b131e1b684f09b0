import Foundation

/// The `pushworker-not-before` header of a scheduled push: the record does not run before this time.
///
/// The value is either UNIX time in milliseconds (decimal digits, e.g. `1796166000000`) or an RFC 3339
/// date-time (`2026-12-01T21:00:00Z`, `2026-12-01T21:00:00.250+01:00`; a time zone is required). A record
/// whose time has come (or passed) runs at once; a later one waits without holding back its partition or
/// other keys (the service's retry topic, see docs/guarantees.md). Any other value is refused: the record
/// is `failed` / `invalidPayload` with a detail naming the header.
public struct NotBefore: Sendable, Hashable {
    /// The header's name: `pushworker-not-before`.
    public static let header = "pushworker-not-before"

    /// The time, in milliseconds since the UNIX epoch.
    public var unixMs: Int64

    /// Creates the time from UNIX milliseconds.
    public init(unixMs: Int64) {
        self.unixMs = unixMs
    }

    /// Parses the header's bytes; `nil` when they are neither form (empty, not UTF-8, a number of more than
    /// 15 digits, a date-time without a time zone, …).
    public init?(header value: [UInt8]) {
        guard !value.isEmpty, value.count <= 64 else { return nil }
        if value.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // 15 digits reach the year 33658: enough, and far from overflow.
            guard value.count <= 15 else { return nil }
            unixMs = value.reduce(Int64(0)) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) }
            return
        }
        guard let text = String(validating: value, as: UTF8.self), let ms = Self.rfc3339Milliseconds(text) else { return nil }
        unixMs = ms
    }

    /// Whether the time is later than `nowMs` (UNIX milliseconds).
    public func isAfter(_ nowMs: Int64) -> Bool { unixMs > nowMs }

    /// The header's value for `unixMs`, as pushworker writes it on records it puts in the retry topic.
    public var headerValue: [UInt8] { Array(String(unixMs).utf8) }

    /// An RFC 3339 date-time (section 5.6: `T` or `t` or a space between date and time, optional fraction,
    /// `Z` or a numeric offset) in UNIX milliseconds, read by Foundation's `ISO8601DateFormatter`.
    static func rfc3339Milliseconds(_ text: String) -> Int64? {
        // The formatter accepts only `T`; RFC 3339 allows `t` and a space too.
        var normalized = text
        if let separator = normalized.firstIndex(where: { $0 == "t" || $0 == " " }), normalized.distance(from: normalized.startIndex, to: separator) == 10 {
            normalized.replaceSubrange(separator...separator, with: "T")
        }
        if normalized.hasSuffix("z") { normalized = String(normalized.dropLast()) + "Z" }
        // A time zone is required: a bare local time would mean something else on every host.
        let offset = Array(normalized.utf8.suffix(6))
        let hasOffset = offset.count == 6 && (offset[0] == UInt8(ascii: "+") || offset[0] == UInt8(ascii: "-")) && offset[3] == UInt8(ascii: ":")
        guard normalized.hasSuffix("Z") || hasOffset else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = normalized.contains(".") ? [.withInternetDateTime, .withFractionalSeconds] : [.withInternetDateTime]
        guard let date = formatter.date(from: normalized) else { return nil }
        let ms = (date.timeIntervalSince1970 * 1000).rounded()
        guard ms.isFinite, abs(ms) < 1e15 else { return nil }
        return Int64(ms)
    }
}
