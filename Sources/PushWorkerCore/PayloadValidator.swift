import CCJSON

/// Checks a record as Apple checks a background push, in the contract's order (section 2, rows 1–4), and
/// reads its `type`.
///
/// A value is read once, by ``PayloadScan``: one pass over the bytes that checks strict JSON (RFC 8259, as
/// far as cJSON also accepts it) and valid UTF-8 and reads the envelope (`aps`, `aps.content-available`,
/// `type`) exactly. A value that pass refuses goes through the reference passes, which decide its verdict
/// and word its detail: UTF-8 by the Swift standard library, what cJSON lets through that RFC 8259 does not
/// by a strictness pass over the bytes, JSON syntax by cJSON (Debian `libcjson-dev`), then the envelope by
/// ``PayloadEnvelope`` (never from cJSON's C strings, which stop at a `\u0000`). Both give the same verdict
/// for every value (the tests and the fuzz target compare them). Beyond JSON syntax a value is `failed` /
/// `invalidPayload` when:
/// - it nests arrays and objects more than ``maxNestingDepth`` levels deep (the object itself is level 1);
/// - it has the key `aps` or `type` twice at the top level, or `content-available` twice inside `aps`.
///
/// Keys and strings are compared with all their bytes: a `type` of `"ok\u0000evil"` is not `ok`, a key
/// `"type\u0000x"` is not `type`, and a key `"\u0074ype"` is `type`.
public struct PayloadValidator: Sendable {
    /// The largest value accepted, in bytes: 4096 by default, APNs's limit for a background push.
    public var maxPayloadBytes: Int

    /// The deepest nesting of arrays and objects accepted: 1000 levels, counting the top-level object as
    /// level 1 (so `{"a":[[…]]}` may hold 999 nested arrays). This is cJSON's `CJSON_NESTING_LIMIT`, which
    /// counts the same way; a deeper value is `failed` / `invalidPayload` with a detail naming this limit.
    public static let maxNestingDepth = Int(CJSON_NESTING_LIMIT)

    /// The checks' verdict on one record.
    public enum Verdict: Sendable, Equatable {
        /// The record passed rows 1–4; `type` is its string `type` with all its bytes, or `nil` if missing
        /// or not a string.
        case accepted(type: String?)
        /// The record got its result without running a worker.
        case rejected(BackgroundFetchResult, ResultReason, detail: String)
    }

    /// Creates a validator.
    /// - Parameter maxPayloadBytes: the value size limit in bytes (default 4096).
    public init(maxPayloadBytes: Int = 4096) {
        self.maxPayloadBytes = maxPayloadBytes
    }

    /// Whether ``check(value:apnsExpiration:nowMs:)`` reads the value with the single pass first (`false`
    /// only in ``validateByReferencePasses(value:apnsExpirationHeader:nowMs:)``).
    private var singlePass = true

    /// Checks `value` and the `apns-expiration` header at `nowMs` (UNIX milliseconds).
    ///
    /// - Parameter apnsExpiration: the `apns-expiration` header text (UNIX seconds), or `nil` if absent.
    public func validate(value: [UInt8]?, apnsExpiration: String?, nowMs: Int64) -> Verdict {
        check(value: value, apnsExpiration: apnsExpiration.map { Array($0.utf8) }, nowMs: nowMs).verdict
    }

    /// Checks `value` and the `apns-expiration` header's bytes at `nowMs` (UNIX milliseconds).
    ///
    /// - Parameter apnsExpirationHeader: the header's bytes (``APNsExpiration``), or `nil` if absent; bytes
    ///   that are not decimal UNIX seconds (not UTF-8 included) are `failed` / `invalidPayload`.
    public func validate(value: [UInt8]?, apnsExpirationHeader: [UInt8]?, nowMs: Int64) -> Verdict {
        check(value: value, apnsExpiration: apnsExpirationHeader, nowMs: nowMs).verdict
    }

    /// ``validate(value:apnsExpirationHeader:nowMs:)`` through the reference passes alone (the UTF-8 check,
    /// the strictness pass, cJSON and the envelope scan, without the single pass), for the tests and the
    /// fuzz target: its verdict must be the same as `validate`'s for every value, detail included.
    @_spi(Reference)
    public func validateByReferencePasses(value: [UInt8]?, apnsExpirationHeader: [UInt8]?, nowMs: Int64) -> Verdict {
        var reference = self
        reference.singlePass = false
        return reference.check(value: value, apnsExpiration: apnsExpirationHeader, nowMs: nowMs).verdict
    }

    /// Whether the single pass (``PayloadScan``) reads `value` itself (`true`), or leaves it to the reference
    /// passes (`false`): `true` exactly for the values the reference passes take past row 2 (accepted, or
    /// rejected by rows 3 and 4), whatever the size limit; for the tests and the fuzz target.
    @_spi(Reference)
    public static func singlePassReads(_ value: [UInt8]) -> Bool {
        PayloadScan.read(value) != nil
    }

    /// Whether the reference passes take `value` past row 2 (it is one strict JSON object without a
    /// duplicated envelope key), whatever the size limit; for the tests and the fuzz target.
    @_spi(Reference)
    public static func referencePassesRead(_ value: [UInt8]) -> Bool {
        if case .success = referenceEnvelope(value) { return true }
        return false
    }

    /// ``validate(value:apnsExpirationHeader:nowMs:)`` and the payload's string `type` when it was read
    /// (also for records rejected by rows 3 and 4), for the result's `type` field.
    func check(value: [UInt8]?, apnsExpiration: [UInt8]?, nowMs: Int64) -> (verdict: Verdict, type: String?) {
        guard let value else {
            return (.rejected(.failed, .invalidPayload, detail: "the record value is null; expected a JSON object"), nil)
        }
        // Row 1: size, before any parsing.
        if value.count > maxPayloadBytes {
            return (.rejected(.failed, .payloadTooLarge, detail: "the value is \(value.count) bytes; the limit is \(maxPayloadBytes) bytes"), nil)
        }
        if value.isEmpty {
            return (.rejected(.failed, .invalidPayload, detail: "the record value is empty; expected a JSON object"), nil)
        }
        // Row 2: valid UTF-8, then a JSON object: the single pass reads the envelope of a value that is one;
        // for any other, the reference passes say why not.
        let parsed: PayloadEnvelope
        if singlePass, let envelope = PayloadScan.read(value) {
            parsed = envelope
        } else {
            switch Self.referenceEnvelope(value) {
            case .failure(let problem):
                return (.rejected(.failed, .invalidPayload, detail: problem.detail), nil)
            case .success(let envelope):
                parsed = envelope
            }
        }
        // Row 3: aps.content-available must be the integer 1.
        if let problem = parsed.silentProblem {
            return (.rejected(.noData, .notSilent, detail: problem), parsed.type)
        }
        // Row 4: apns-expiration (UNIX seconds); 0 or absent = never expires.
        if let apnsExpiration {
            guard let expiration = APNsExpiration(header: apnsExpiration) else {
                return (.rejected(.failed, .invalidPayload, detail: "the apns-expiration header \(Self.describeHeader(apnsExpiration)) is not UNIX seconds"), parsed.type)
            }
            if expiration.hasPassed(atMs: nowMs) {
                return (.rejected(.noData, .expired, detail: "apns-expiration \(expiration.seconds) passed before the record was taken"), parsed.type)
            }
        }
        return (.accepted(type: parsed.type), parsed.type)
    }

    /// Row 2 through the reference passes: valid UTF-8, no text cJSON accepts but RFC 8259 does not, one
    /// JSON object to cJSON, then the envelope; the `invalidPayload` detail of the first that fails.
    static func referenceEnvelope(_ value: [UInt8]) -> Result<PayloadEnvelope, ReferenceProblem> {
        guard Self.isValidUTF8(value) else { return .failure(ReferenceProblem("the value is not valid UTF-8")) }
        if let problem = Self.strictnessProblem(value) { return .failure(ReferenceProblem(problem)) }
        if let problem = Self.syntaxProblem(value) { return .failure(ReferenceProblem(problem)) }
        return PayloadEnvelope.read(value).mapError { ReferenceProblem($0.detail) }
    }

    /// The detail of a value the reference passes reject.
    struct ReferenceProblem: Error {
        var detail: String
        init(_ detail: String) { self.detail = detail }
    }

    /// A header value for a detail: quoted when it is short UTF-8, else its size (a header can be large,
    /// and a detail must stay small).
    static func describeHeader(_ bytes: [UInt8]) -> String {
        guard bytes.count <= 64, let text = String(validating: bytes, as: UTF8.self) else {
            return String(validating: bytes, as: UTF8.self) == nil ? "(\(bytes.count) bytes, not UTF-8)" : "(\(bytes.count) bytes)"
        }
        return "'\(text)'"
    }

    @inline(__always)
    static func isValidUTF8(_ bytes: [UInt8]) -> Bool {
        // ASCII fast path; otherwise the standard library's validating decoder.
        if bytes.allSatisfy({ $0 < 0x80 }) { return true }
        return String(validating: bytes, as: UTF8.self) != nil
    }

    /// What cJSON accepts that RFC 8259 does not: control characters (in strings, or as whitespace other
    /// than tab, line feed and carriage return), a `\u` escape without four hex digits (cJSON reads
    /// `"\u0[00"` as a NUL), numbers with a leading zero (`01`), a decimal point
    /// without digits on both sides (`1.`, `.5`), a minus sign without a digit (`-.5`). One pass over the
    /// bytes, before cJSON parses the rest. The same pass counts the nesting of arrays and objects and stops
    /// at the first one deeper than ``maxNestingDepth`` (cJSON would call it a syntax error).
    static func strictnessProblem(_ bytes: [UInt8]) -> String? {
        var depth = 0
        var inString = false
        var escaped = false
        var previous: UInt8 = 0x20
        var beforePrevious: UInt8 = 0x20
        for (index, byte) in bytes.enumerated() {
            if inString {
                if escaped {
                    escaped = false
                    switch byte {
                    case 0x22, 0x5C, 0x2F, 0x62, 0x66, 0x6E, 0x72, 0x74: break  // " \ / b f n r t
                    case 0x75:  // u: cJSON reads a \u without four hex digits as U+0000
                        guard index + 4 < bytes.count, (index + 1...index + 4).allSatisfy({ Self.isHexDigit(bytes[$0]) }) else {
                            return "the value is not valid JSON (a \\u escape without four hex digits at byte \(index - 1))"
                        }
                    default:
                        return "the value is not valid JSON (an unknown escape at byte \(index - 1))"
                    }
                } else if byte == 0x5C {
                    escaped = true
                } else if byte == 0x22 {
                    inString = false
                } else if byte < 0x20 {
                    return "the value is not valid JSON (a raw control character inside a string at byte \(index))"
                }
            } else if byte == 0x22 {
                inString = true
            } else if byte == 0x5B || byte == 0x7B {
                depth += 1
                if depth > maxNestingDepth {
                    return "the value nests arrays and objects more than \(maxNestingDepth) levels deep (level \(depth) at byte \(index)); the nesting limit is \(maxNestingDepth) levels"
                }
            } else if byte == 0x5D || byte == 0x7D {
                depth -= 1
            } else if byte < 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0D {
                return "the value is not valid JSON (a control character outside a string at byte \(index))"
            } else if byte == 0x2E && (!(0x30...0x39).contains(previous) || !Self.isDigit(bytes, index + 1)) {
                return "the value is not valid JSON (a decimal point without digits on both sides at byte \(index))"
            } else if byte == 0x2D && !Self.isDigit(bytes, index + 1) {
                return "the value is not valid JSON (a minus sign not followed by a digit at byte \(index))"
            } else if byte == 0x30, index + 1 < bytes.count, (0x30...0x39).contains(bytes[index + 1]),
                      !(0x30...0x39).contains(previous), previous != 0x2E, previous != 0x65, previous != 0x45,
                      previous != 0x2B, !(previous == 0x2D && (beforePrevious == 0x65 || beforePrevious == 0x45)) {
                // Exponent digits (1e05, 1e-05) may start with 0; integer parts (01, -01) may not.
                return "the value is not valid JSON (a number with a leading zero at byte \(index))"
            }
            beforePrevious = previous
            previous = byte
        }
        return nil
    }

    @inline(__always)
    static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }

    @inline(__always)
    static func isDigit(_ bytes: [UInt8], _ index: Int) -> Bool {
        index < bytes.count && (0x30...0x39).contains(bytes[index])
    }

    /// Whether cJSON parses `value` as one JSON object followed by nothing but whitespace; the problem if not.
    static func syntaxProblem(_ value: [UInt8]) -> String? {
        value.withUnsafeBufferPointer { buffer -> String? in
            buffer.withMemoryRebound(to: CChar.self) { chars -> String? in
                guard let base = chars.baseAddress else { return "the record value is empty; expected a JSON object" }
                var end: UnsafePointer<CChar>?
                guard let root = cJSON_ParseWithLengthOpts(base, chars.count, &end, 0) else {
                    let at = end.map { base.distance(to: $0) } ?? 0
                    return "the value is not valid JSON (syntax error near byte \(at))"
                }
                defer { cJSON_Delete(root) }
                // Only whitespace may follow the value.
                if let end {
                    var index = base.distance(to: end)
                    while index < chars.count {
                        switch UInt8(bitPattern: chars[index]) {
                        case 0x20, 0x09, 0x0A, 0x0D: index += 1
                        default: return "the value is not valid JSON (unexpected data after the object at byte \(index))"
                        }
                    }
                }
                guard cJSON_IsObject(root) != 0 else { return "the value is JSON but not an object" }
                return nil
            }
        }
    }
}
