/// The `apns-expiration` header of a push: when it stops being worth delivering.
///
/// APNs reads the header as a UNIX epoch date in seconds; `0` means "deliver once or never" (pushworker,
/// which always takes a record once, reads it as "never expires"). The text is ASCII decimal digits,
/// optionally surrounded by spaces; anything else (a sign, a fraction, letters, a value that is not UTF-8,
/// more than 19 digits) is malformed and the record gets `failed` / `invalidPayload` naming the header
/// (contract section 2, row 4).
public struct APNsExpiration: Sendable, Hashable {
    /// The expiration as UNIX seconds; 0 means the push never expires.
    public var seconds: Int64

    /// Creates an expiration from UNIX seconds (0: never expires).
    public init(seconds: Int64) {
        self.seconds = max(0, seconds)
    }

    /// Parses a header value.
    /// - Parameter header: the header's bytes, e.g. `1767225600`.
    /// - Returns: `nil` when the bytes are not decimal UNIX seconds (see the type's documentation).
    public init?(header: [UInt8]) {
        var start = 0
        var end = header.count
        while start < end && header[start] == 0x20 { start += 1 }
        while end > start && header[end - 1] == 0x20 { end -= 1 }
        // Int64.max has 19 digits; more can only overflow.
        guard start < end, end - start <= 19 else { return nil }
        var value: Int64 = 0
        for index in start..<end {
            let byte = header[index]
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(byte - 0x30))
            guard !overflow1 && !overflow2 else { return nil }
            value = sum
        }
        self.seconds = value
    }

    /// Whether the push never expires (`seconds` is 0).
    public var neverExpires: Bool { seconds == 0 }

    /// Whether the expiration is at or before `nowMs` (UNIX milliseconds). Never true for 0; a date so far
    /// ahead that it overflows in milliseconds has not passed.
    public func hasPassed(atMs nowMs: Int64) -> Bool {
        guard !neverExpires else { return false }
        let (expirationMs, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        return !overflow && expirationMs <= nowMs
    }
}
