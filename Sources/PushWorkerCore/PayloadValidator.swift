import CCJSON

/// Checks a record as Apple checks a background push, in the contract's order (section 2, rows 1–4), and
/// reads its `type`.
///
/// JSON syntax is checked by cJSON (Debian `libcjson-dev`); UTF-8 by the Swift standard library.
public struct PayloadValidator: Sendable {
    /// The largest value accepted, in bytes: 4096 by default, APNs's limit for a background push.
    public var maxPayloadBytes: Int

    /// The checks' verdict on one record.
    public enum Verdict: Sendable, Equatable {
        /// The record passed rows 1–4; `type` is its string `type`, or `nil` if missing or not a string.
        case accepted(type: String?)
        /// The record got its result without running a worker.
        case rejected(BackgroundFetchResult, ResultReason, detail: String)
    }

    /// Creates a validator.
    /// - Parameter maxPayloadBytes: the value size limit in bytes (default 4096).
    public init(maxPayloadBytes: Int = 4096) {
        self.maxPayloadBytes = maxPayloadBytes
    }

    /// Checks `value` and the `apns-expiration` header at `nowMs` (UNIX milliseconds).
    ///
    /// - Parameter apnsExpiration: the `apns-expiration` header text (UNIX seconds), or `nil` if absent.
    public func validate(value: [UInt8]?, apnsExpiration: String?, nowMs: Int64) -> Verdict {
        check(value: value, apnsExpiration: apnsExpiration, nowMs: nowMs).verdict
    }

    /// ``validate(value:apnsExpiration:nowMs:)`` and the payload's string `type` when it was read (also for
    /// records rejected by rows 3 and 4), for the result's `type` field.
    func check(value: [UInt8]?, apnsExpiration: String?, nowMs: Int64) -> (verdict: Verdict, type: String?) {
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
        // Row 2: valid UTF-8, then a JSON object.
        guard Self.isValidUTF8(value) else {
            return (.rejected(.failed, .invalidPayload, detail: "the value is not valid UTF-8"), nil)
        }
        if let problem = Self.strictnessProblem(value) {
            return (.rejected(.failed, .invalidPayload, detail: problem), nil)
        }
        let parsed: ParsedEnvelope
        switch Self.parseEnvelope(value) {
        case .failure(let detail):
            return (.rejected(.failed, .invalidPayload, detail: detail), nil)
        case .success(let envelope):
            parsed = envelope
        }
        // Row 3: aps.content-available must be the integer 1.
        if let problem = parsed.silentProblem {
            return (.rejected(.noData, .notSilent, detail: problem), parsed.type)
        }
        // Row 4: apns-expiration (UNIX seconds); 0 or absent = never expires.
        if let apnsExpiration {
            guard let expiration = APNsExpiration(header: Array(apnsExpiration.utf8)) else {
                return (.rejected(.failed, .invalidPayload, detail: "the apns-expiration header '\(apnsExpiration)' is not UNIX seconds"), parsed.type)
            }
            if expiration.hasPassed(atMs: nowMs) {
                return (.rejected(.noData, .expired, detail: "apns-expiration \(expiration.seconds) passed before the record was taken"), parsed.type)
            }
        }
        return (.accepted(type: parsed.type), parsed.type)
    }

    @inline(__always)
    static func isValidUTF8(_ bytes: [UInt8]) -> Bool {
        // ASCII fast path; otherwise the standard library's validating decoder.
        if bytes.allSatisfy({ $0 < 0x80 }) { return true }
        return String(validating: bytes, as: UTF8.self) != nil
    }

    /// What cJSON accepts that RFC 8259 does not: control characters (in strings, or as whitespace other
    /// than tab, line feed and carriage return), numbers with a leading zero (`01`), a decimal point
    /// without digits on both sides (`1.`, `.5`), a minus sign without a digit (`-.5`). One pass over the
    /// bytes, before cJSON parses the rest.
    static func strictnessProblem(_ bytes: [UInt8]) -> String? {
        var inString = false
        var escaped = false
        var previous: UInt8 = 0x20
        var beforePrevious: UInt8 = 0x20
        for (index, byte) in bytes.enumerated() {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == 0x5C {
                    escaped = true
                } else if byte == 0x22 {
                    inString = false
                } else if byte < 0x20 {
                    return "the value is not valid JSON (a raw control character inside a string at byte \(index))"
                }
            } else if byte == 0x22 {
                inString = true
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
    static func isDigit(_ bytes: [UInt8], _ index: Int) -> Bool {
        index < bytes.count && (0x30...0x39).contains(bytes[index])
    }

    struct ParsedEnvelope {
        var type: String?
        var silentProblem: String?
    }

    enum ParseResult {
        case success(ParsedEnvelope)
        case failure(String)
    }

    static func parseEnvelope(_ value: [UInt8]) -> ParseResult {
        value.withUnsafeBufferPointer { buffer -> ParseResult in
            buffer.withMemoryRebound(to: CChar.self) { chars -> ParseResult in
                guard let base = chars.baseAddress else { return .failure("the record value is empty; expected a JSON object") }
                var end: UnsafePointer<CChar>?
                guard let root = cJSON_ParseWithLengthOpts(base, chars.count, &end, 0) else {
                    let at = end.map { base.distance(to: $0) } ?? 0
                    return .failure("the value is not valid JSON (syntax error near byte \(at))")
                }
                defer { cJSON_Delete(root) }
                // Only whitespace may follow the value.
                if let end {
                    var index = base.distance(to: end)
                    while index < chars.count {
                        switch UInt8(bitPattern: chars[index]) {
                        case 0x20, 0x09, 0x0A, 0x0D: index += 1
                        default: return .failure("the value is not valid JSON (unexpected data after the object at byte \(index))")
                        }
                    }
                }
                guard cJSON_IsObject(root) != 0 else {
                    return .failure("the value is JSON but not an object")
                }
                var envelope = ParsedEnvelope()
                if let type = cJSON_GetObjectItemCaseSensitive(root, "type"), cJSON_IsString(type) != 0, let text = type.pointee.valuestring {
                    envelope.type = String(cString: text)
                }
                guard let aps = cJSON_GetObjectItemCaseSensitive(root, "aps") else {
                    envelope.silentProblem = "no aps dictionary; a background push needs \"aps\": {\"content-available\": 1}"
                    return .success(envelope)
                }
                guard cJSON_IsObject(aps) != 0 else {
                    envelope.silentProblem = "aps is not a dictionary"
                    return .success(envelope)
                }
                guard let flag = cJSON_GetObjectItemCaseSensitive(aps, "content-available") else {
                    envelope.silentProblem = "aps has no content-available; a background push needs \"content-available\": 1"
                    return .success(envelope)
                }
                if cJSON_IsNumber(flag) == 0 || flag.pointee.valuedouble != 1 {
                    envelope.silentProblem = "aps.content-available is \(describe(flag)); it must be the integer 1"
                }
                return .success(envelope)
            }
        }
    }

    private static func describe(_ item: UnsafeMutablePointer<cJSON>) -> String {
        if cJSON_IsBool(item) != 0 { return cJSON_IsTrue(item) != 0 ? "true" : "false" }
        if cJSON_IsNull(item) != 0 { return "null" }
        if cJSON_IsString(item) != 0, let text = item.pointee.valuestring { return "the string \"\(String(cString: text).prefix(32))\"" }
        if cJSON_IsNumber(item) != 0 {
            let number = item.pointee.valuedouble
            return number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        }
        if cJSON_IsArray(item) != 0 { return "an array" }
        return "an object"
    }
}
