/// A parsed W3C Trace Context `traceparent` header (Trace Context level 1,
/// https://www.w3.org/TR/trace-context/, section 3.2): `version-traceid-parentid-flags`, e.g.
/// `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`.
///
/// The rules followed: lowercase hex only, in every field; `version` is two hex digits and not `ff`;
/// `trace-id` is 32 hex digits, not all zero; `parent-id` is 16 hex digits, not all zero; `trace-flags` is
/// two hex digits, kept whole (bit 0 is `sampled`, the only flag level 1 defines; other bits are kept, not
/// interpreted). Version `00` is exactly 55 characters. A later version is parsed as section 3.2.4 says:
/// at least 55 characters, the four fields at the same places, then the end or a `-` and further fields,
/// which are ignored. Nothing is trimmed (a Kafka header is not an HTTP field): surrounding spaces make it
/// malformed. Anything else is malformed and parses as `nil`; the spec then says to start a new trace.
///
/// pushworker forwards the `traceparent` header's bytes unchanged whether or not they parse; this type is
/// for workers that want the fields (``Job/traceContext``).
public struct TraceContext: Sendable, Hashable {
    /// The format version (0 for the current spec).
    public var version: UInt8
    /// The trace id: 32 lowercase hex digits.
    public var traceId: String
    /// The parent span id: 16 lowercase hex digits.
    public var parentId: String
    /// The trace flags, all eight bits as received; bit 0 is `sampled` (``sampledFlag``).
    public var flags: UInt8

    /// The `sampled` bit of ``flags`` (0x01): the caller may have recorded its part of the trace.
    public static let sampledFlag: UInt8 = 0x01

    /// Whether the caller sampled the trace (``sampledFlag`` is set in ``flags``).
    public var isSampled: Bool { flags & Self.sampledFlag != 0 }

    /// The header text for these fields, as a `traceparent` header writes them: always the four fields
    /// (a later version's further fields are not kept), in the version given by ``version``.
    public var traceparent: String {
        "\(Self.hex(version))-\(traceId)-\(parentId)-\(Self.hex(flags))"
    }

    /// Parses a `traceparent` header value.
    /// - Returns: `nil` when the bytes are not a valid `traceparent` (see the type's documentation).
    public init?(traceparent header: [UInt8]) {
        guard header.count >= 55,
              header[2] == 0x2D, header[35] == 0x2D, header[52] == 0x2D,
              let version = Self.byte(header, at: 0), version != 0xFF,
              let flags = Self.byte(header, at: 53),
              Self.isHex(header, 3..<35), Self.isHex(header, 36..<52),
              !Self.isZero(header, 3..<35), !Self.isZero(header, 36..<52)
        else { return nil }
        if version == 0 {
            guard header.count == 55 else { return nil }
        } else if header.count > 55 {
            guard header[55] == 0x2D else { return nil }
        }
        self.version = version
        self.flags = flags
        self.traceId = String(decoding: header[3..<35], as: UTF8.self)
        self.parentId = String(decoding: header[36..<52], as: UTF8.self)
    }

    /// Parses a `traceparent` header value given as text.
    public init?(traceparent header: String) {
        self.init(traceparent: Array(header.utf8))
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    private static func byte(_ bytes: [UInt8], at index: Int) -> UInt8? {
        guard let high = hexValue(bytes[index]), let low = hexValue(bytes[index + 1]) else { return nil }
        return high << 4 | low
    }

    private static func isHex(_ bytes: [UInt8], _ range: Range<Int>) -> Bool {
        range.allSatisfy { hexValue(bytes[$0]) != nil }
    }

    private static func isZero(_ bytes: [UInt8], _ range: Range<Int>) -> Bool {
        range.allSatisfy { bytes[$0] == 0x30 }
    }

    private static func hex(_ value: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(value >> 4)], digits[Int(value & 0x0F)]])
    }
}
