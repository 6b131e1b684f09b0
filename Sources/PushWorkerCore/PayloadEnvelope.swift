/// The envelope of a background push: the top-level `type` string and the `aps.content-available` check,
/// read exactly.
///
/// ``PayloadScan`` reads it in the validator's single pass, which also checks the syntax. ``read(_:)`` here
/// is the reference passes' envelope scan: it runs only after the UTF-8 check, the strictness pass and
/// cJSON have accepted the bytes (for a value the single pass refused), and anything unexpected is still
/// reported as a problem, never a trap. Both readers share the key comparison and the `content-available`
/// wording below. The reader:
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
    static func read(_ bytes: [UInt8]) -> Result<PayloadEnvelope, JSONScanner.Problem> {
        bytes.withUnsafeBufferPointer { buffer in
            var scanner = JSONScanner(buffer)
            do throws(JSONScanner.Problem) {
                return .success(try scanner.readEnvelope())
            } catch {
                return .failure(error)
            }
        }
    }
}

/// The envelope's part of the scanner (``PayloadScan`` shares ``contentAvailableProblem()``).
extension JSONScanner {
    mutating func readEnvelope() throws(Problem) -> PayloadEnvelope {
        skipWhitespace()
        guard peek() == UInt8(ascii: "{") else { throw Problem(detail: "the value is JSON but not an object") }
        var envelope = PayloadEnvelope()
        var apsProblem: String? = "no aps dictionary; a background push needs \"aps\": {\"content-available\": 1}"
        var seenAps = false
        var seenType = false
        try members { (scanner: inout JSONScanner, key: RawString) throws(Problem) in
            if try scanner.key(key, equals: "aps") {
                guard !seenAps else { throw Self.duplicate("aps", "") }
                seenAps = true
                apsProblem = try scanner.readAps()
            } else if try scanner.key(key, equals: "type") {
                guard !seenType else { throw Self.duplicate("type", "") }
                seenType = true
                if scanner.peek() == UInt8(ascii: "\"") {
                    envelope.type = try scanner.text(try scanner.string())
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
        try members { (scanner: inout JSONScanner, key: RawString) throws(Problem) in
            guard try scanner.key(key, equals: "content-available") else {
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
            if index - start == 1 && bytes[start] == UInt8(ascii: "1") { return nil }  // the usual case, without a String
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
}
