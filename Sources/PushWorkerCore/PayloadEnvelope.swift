/// The envelope of a background push: the top-level `type` string and the `aps.content-available` check,
/// read exactly in one pass over the value's bytes.
///
/// The bytes must already be known to be one valid JSON object (``PayloadValidator`` checks that with
/// cJSON first); anything unexpected is still reported as a problem, never a trap. The reader:
/// - decodes the keys `aps`, `type` and `content-available` and the `type` string with every JSON escape
///   (RFC 8259 section 7), `\u0000` and surrogate pairs included, and compares them byte for byte: a key
///   `"type\u0000x"` is not `type`, a key `"\u0074ype"` is;
/// - rejects a duplicate `aps` or `type` key (top level) or a duplicate `content-available` key (inside
///   `aps`): two parsers may pick different members of a duplicated key (RFC 8259 section 4 leaves it
///   open), so the record would route ambiguously;
/// - skips every other value without decoding it (no allocation for the job's data keys).
struct PayloadEnvelope: Sendable, Equatable {
    /// The string `type`, with all its bytes, or `nil` when missing or not a string.
    var type: String?
    /// Why `aps.content-available` is not the integer 1 (contract section 2, row 3), or `nil`.
    var silentProblem: String?

    /// Reads the envelope of `bytes`, a JSON object.
    /// - Returns: the envelope, or a human-readable problem (a duplicate key, or bytes that are not the
    ///   valid JSON object they must be) for a `failed` / `invalidPayload` result.
    static func read(_ bytes: [UInt8]) -> Result<PayloadEnvelope, Problem> {
        bytes.withUnsafeBufferPointer { buffer in
            var scanner = EnvelopeScanner(buffer)
            do throws(Problem) {
                return .success(try scanner.readEnvelope())
            } catch {
                return .failure(error)
            }
        }
    }

    /// Why an envelope could not be read.
    struct Problem: Error, Equatable {
        /// The detail of the `failed` / `invalidPayload` result.
        var detail: String
    }
}

/// A cursor over one value's bytes, used only inside ``PayloadEnvelope/read(_:)``'s
/// `withUnsafeBufferPointer` closure (it never outlives the buffer).
private struct EnvelopeScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    private static let aps: [UInt8] = Array("aps".utf8)
    private static let type: [UInt8] = Array("type".utf8)
    private static let contentAvailable: [UInt8] = Array("content-available".utf8)

    typealias Problem = PayloadEnvelope.Problem

    func invalid(_ what: String) -> Problem {
        Problem(detail: "the value is not valid JSON (\(what) at byte \(index))")
    }

    mutating func readEnvelope() throws(Problem) -> PayloadEnvelope {
        skipWhitespace()
        guard peek() == UInt8(ascii: "{") else { throw Problem(detail: "the value is JSON but not an object") }
        var envelope = PayloadEnvelope()
        var apsProblem: String? = "no aps dictionary; a background push needs \"aps\": {\"content-available\": 1}"
        var seenAps = false
        var seenType = false
        try members { (scanner: inout EnvelopeScanner, key: RawString) throws(Problem) in
            if try scanner.key(key, equals: Self.aps) {
                guard !seenAps else { throw Self.duplicate("aps", "") }
                seenAps = true
                apsProblem = try scanner.readAps()
            } else if try scanner.key(key, equals: Self.type) {
                guard !seenType else { throw Self.duplicate("type", "") }
                seenType = true
                if scanner.peek() == UInt8(ascii: "\"") {
                    let string = try scanner.string()
                    let decoded = try scanner.decode(string)
                    guard let text = String(validating: decoded, as: UTF8.self) else {
                        throw scanner.invalid("a string that is not valid UTF-8 once unescaped")
                    }
                    envelope.type = text
                } else {
                    try scanner.skipValue()
                }
            } else {
                try scanner.skipValue()
            }
        }
        skipWhitespace()
        guard index == bytes.count else { throw invalid("unexpected data after the object") }
        envelope.silentProblem = apsProblem
        return envelope
    }

    static func duplicate(_ key: String, _ inside: String) -> Problem {
        Problem(detail: "the key \"\(key)\" appears more than once\(inside); a push must have one, or parsers disagree on which counts")
    }

    /// Reads the `aps` value; returns the row-3 problem, or `nil` when `content-available` is 1.
    mutating func readAps() throws(Problem) -> String? {
        guard peek() == UInt8(ascii: "{") else {
            try skipValue()
            return "aps is not a dictionary"
        }
        var problem: String? = "aps has no content-available; a background push needs \"content-available\": 1"
        var seen = false
        try members { (scanner: inout EnvelopeScanner, key: RawString) throws(Problem) in
            guard try scanner.key(key, equals: Self.contentAvailable) else {
                try scanner.skipValue()
                return
            }
            guard !seen else { throw Self.duplicate("content-available", " inside aps") }
            seen = true
            problem = try scanner.contentAvailableProblem()
        }
        return problem
    }

    /// `content-available` must be a number equal to 1 (as cJSON reads it: `1`, `1.0` and `1e0` count).
    mutating func contentAvailableProblem() throws(Problem) -> String? {
        let start = index
        switch peek() {
        case UInt8(ascii: "\""):
            let string = try self.string()
            let text = String(decoding: try decode(string), as: UTF8.self)
            return "aps.content-available is the string \"\(text.prefix(32))\"; it must be the integer 1"
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            try skipValue()
            return "aps.content-available is \(bytes[start] == UInt8(ascii: "{") ? "an object" : "an array"); it must be the integer 1"
        default:
            try skipValue()
            let token = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            switch token {
            case "true", "false", "null":
                return "aps.content-available is \(token); it must be the integer 1"
            default:
                guard let number = Double(token) else { throw invalid("a malformed value") }
                if number == 1 { return nil }
                let shown = number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
                return "aps.content-available is \(shown); it must be the integer 1"
            }
        }
    }

    /// Calls `body` for each member of the object starting at `index`, with the key's raw range; `body`
    /// must consume the member's value. Leaves `index` after the closing `}`.
    mutating func members(_ body: (inout EnvelopeScanner, RawString) throws(Problem) -> Void) throws(Problem) {
        index += 1  // {
        skipWhitespace()
        if peek() == UInt8(ascii: "}") { index += 1; return }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else { throw invalid("expected a key") }
            let key = try string()
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw invalid("expected ':'") }
            index += 1
            skipWhitespace()
            try body(&self, key)
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return
            default: throw invalid("expected ',' or '}'")
            }
        }
    }

    /// A string's contents as they appear in the bytes (between the quotes), and whether they hold escapes.
    struct RawString {
        var range: Range<Int>
        var hasEscapes: Bool
    }

    /// Reads a string starting at its opening quote; leaves `index` after the closing quote.
    mutating func string() throws(Problem) -> RawString {
        index += 1  // "
        let start = index
        var hasEscapes = false
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                defer { index += 1 }
                return RawString(range: start..<index, hasEscapes: hasEscapes)
            case UInt8(ascii: "\\"):
                hasEscapes = true
                index += 2
            default:
                index += 1
            }
        }
        throw invalid("an unterminated string")
    }

    /// Whether the key `key` is exactly `expected` once its escapes are decoded.
    func key(_ key: RawString, equals expected: [UInt8]) throws(Problem) -> Bool {
        if !key.hasEscapes {
            return key.range.count == expected.count && bytes[key.range].elementsEqual(expected)
        }
        return try decode(key) == expected
    }

    /// The bytes a JSON string stands for (UTF-8), every escape decoded: `\uXXXX` as its UTF-8 encoding
    /// (`\u0000` is a NUL byte), a surrogate pair as one code point.
    func decode(_ string: RawString) throws(Problem) -> [UInt8] {
        guard string.hasEscapes else { return Array(bytes[string.range]) }
        var out: [UInt8] = []
        out.reserveCapacity(string.range.count)
        var at = string.range.lowerBound
        let end = string.range.upperBound
        while at < end {
            let byte = bytes[at]
            guard byte == UInt8(ascii: "\\") else {
                out.append(byte)
                at += 1
                continue
            }
            guard at + 1 < end else { throw invalid("a truncated escape") }
            let escape = bytes[at + 1]
            at += 2
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                guard let unit = hex4(at, end) else { throw invalid("a malformed \\u escape") }
                at += 4
                var scalar = unit
                if (0xD800...0xDBFF).contains(unit) {
                    // A high surrogate must be followed by an escaped low surrogate.
                    guard at + 6 <= end, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u"),
                          let low = hex4(at + 2, end), (0xDC00...0xDFFF).contains(low) else {
                        throw invalid("a \\u escape of a lone high surrogate")
                    }
                    at += 6
                    scalar = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(unit) {
                    throw invalid("a \\u escape of a lone low surrogate")
                }
                guard let decoded = Unicode.Scalar(scalar) else { throw invalid("a malformed \\u escape") }
                UTF8.encode(decoded) { out.append($0) }
            default:
                throw invalid("an unknown escape")
            }
        }
        return out
    }

    /// The four hex digits at `at` (before `end`) as a number, or `nil`.
    func hex4(_ at: Int, _ end: Int) -> UInt32? {
        guard at + 4 <= end else { return nil }
        var value: UInt32 = 0
        for offset in 0..<4 {
            let byte = bytes[at + offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// Skips one value (a string, a number, a literal, or a whole array or object, iteratively: no
    /// recursion however deep the nesting).
    mutating func skipValue() throws(Problem) {
        switch peek() {
        case UInt8(ascii: "\""):
            _ = try string()
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    _ = try string()
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { index += 1; return }
                default:
                    break
                }
                index += 1
            }
            throw invalid("an unterminated array or object")
        case nil:
            throw invalid("a missing value")
        default:
            let start = index
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D: break
                default: index += 1; continue
                }
                break
            }
            if index == start { throw invalid("a missing value") }
        }
    }

    func peek() -> UInt8? {
        index < bytes.count ? bytes[index] : nil
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }
}
