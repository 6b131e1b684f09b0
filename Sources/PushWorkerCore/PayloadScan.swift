/// The validator's single pass over a payload's bytes: it checks that they are one strict JSON object
/// (RFC 8259) that cJSON also parses, and reads its envelope (``PayloadEnvelope``) on the way.
///
/// It decides every payload the reference passes (``PayloadValidator``'s UTF-8 check, strictness pass, cJSON
/// parse and envelope scan) would let through to row 3: for those it returns the same envelope (`type`,
/// the row-3 problem), computed by the same code on the same bytes. For anything else (bytes that are not
/// such an object, a duplicated envelope key) it returns `nil`, and the validator runs the reference passes,
/// which find the problem and word its detail exactly as before (cJSON's error position included). So a
/// valid push is read once; only a value that is rejected as `invalidPayload` is read again.
///
/// What it accepts, beyond RFC 8259's grammar, is what cJSON 1.7.15 (Debian 12's `libcjson-dev`,
/// 1.7.15-1+deb12u4) also accepts:
/// - nesting up to ``PayloadValidator/maxNestingDepth`` levels (the object itself is level 1);
/// - no lone surrogate in a `\u` escape (cJSON refuses one; RFC 8259's grammar allows it).
/// Numbers of any length are accepted, as that cJSON reads them (upstream 1.7.15 copies at most 63
/// characters of a number for `strtod` and refuses a longer one; Debian's build does not); the differential
/// tests would show a cJSON that differs.
/// Strings are valid UTF-8 (a string with bytes above 0x7F is checked by the standard library's validating
/// decoder; outside strings only ASCII is JSON).
enum PayloadScan {
    /// The envelope of `bytes` when they are one strict JSON object without a duplicated `aps`, `type` or
    /// `aps.content-available` key (whitespace around it allowed); `nil` otherwise.
    static func read(_ bytes: [UInt8]) -> PayloadEnvelope? {
        bytes.withUnsafeBufferPointer { buffer in
            var scanner = JSONScanner(buffer)
            return scanner.strictEnvelope()
        }
    }
}

/// The single pass's part of the scanner: each read returns `nil` or `false` at the first byte that is not
/// what strict JSON allows there, with `index` left anywhere.
extension JSONScanner {
    /// ``peek()`` inlined here: the single pass calls it a few dozen times per value, and the scanner's
    /// own is a call into another module.
    @inline(__always)
    func strictPeek() -> UInt8? {
        index < bytes.count ? bytes[index] : nil
    }

    /// ``skipWhitespace()`` inlined here (see ``strictPeek()``).
    @inline(__always)
    mutating func strictSkipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// After a member's value in an object: skips white space, then reads `,` and the white space after
    /// it (`true`: another member follows) or `}` (`false`: the object has ended); `nil` for any other
    /// byte or the end of the bytes.
    @inline(__always)
    mutating func strictAfterMember() -> Bool? {
        strictSkipWhitespace()
        switch strictPeek() {
        case UInt8(ascii: ","):
            index += 1
            strictSkipWhitespace()
            return true
        case UInt8(ascii: "}"):
            index += 1
            return false
        default:
            return nil
        }
    }

    /// The top-level object and its envelope (see ``PayloadScan/read(_:)``).
    mutating func strictEnvelope() -> PayloadEnvelope? {
        strictSkipWhitespace()
        guard strictPeek() == UInt8(ascii: "{") else { return nil }
        index += 1
        strictSkipWhitespace()
        var envelope = PayloadEnvelope()
        // The same default as the envelope scan's (PayloadEnvelope.swift).
        var apsProblem: String? = "no aps dictionary; a background push needs \"aps\": {\"content-available\": 1}"
        var seenAps = false
        var seenType = false
        if strictPeek() == UInt8(ascii: "}") {
            index += 1
        } else {
            while true {
                guard let key = strictKey() else { return nil }
                if strictKey(key, is: "aps") {
                    guard !seenAps, let problem = strictAps() else { return nil }
                    seenAps = true
                    apsProblem = problem
                } else if strictKey(key, is: "type") {
                    guard !seenType else { return nil }
                    seenType = true
                    if strictPeek() == UInt8(ascii: "\"") {
                        guard let string = strictString(), let text = strictText(string) else { return nil }
                        envelope.type = text
                    } else if !strictValue(level: 1) {
                        return nil
                    }
                } else if !strictValue(level: 1) {
                    return nil
                }
                guard let more = strictAfterMember() else { return nil }
                if !more { break }
            }
        }
        strictSkipWhitespace()
        guard index == bytes.count else { return nil }
        envelope.silentProblem = apsProblem
        return envelope
    }

    /// The `aps` value (level 2 when it is an object): `.some(problem)` with the row-3 problem (`nil` when
    /// `content-available` is 1), or `nil` when the bytes are not strict JSON or `content-available` is
    /// duplicated.
    mutating func strictAps() -> String?? {
        guard strictPeek() == UInt8(ascii: "{") else {
            return strictValue(level: 1) ? .some("aps is not a dictionary") : nil
        }
        index += 1
        strictSkipWhitespace()
        var problem: String? = "aps has no content-available; a background push needs \"content-available\": 1"
        var seen = false
        if strictPeek() == UInt8(ascii: "}") {
            index += 1
            return .some(problem)
        }
        while true {
            guard let key = strictKey() else { return nil }
            if strictKey(key, is: "content-available") {
                guard !seen else { return nil }
                seen = true
                let start = index
                guard strictValue(level: 2) else { return nil }
                if index - start != 1 || bytes[start] != UInt8(ascii: "1") {
                    // Anything but the usual `1`: the envelope scan's own wording, over the bytes just checked.
                    let end = index
                    index = start
                    do throws(Problem) {
                        problem = try contentAvailableProblem()
                    } catch {
                        return nil
                    }
                    guard index == end else { return nil }
                } else {
                    problem = nil
                }
            } else if !strictValue(level: 2) {
                return nil
            }
            guard let more = strictAfterMember() else { return nil }
            if !more { return .some(problem) }
        }
    }

    /// Whether the key `key` is `expected` once decoded: compared in place when it has no escapes, else
    /// decoded by ``key(_:equals:)`` (`false` for an escape it cannot decode, which ``strictString()`` has
    /// already refused).
    @inline(__always)
    func strictKey(_ key: RawString, is expected: StaticString) -> Bool {
        guard !key.hasEscapes else { return (try? self.key(key, equals: expected)) ?? false }
        let length = expected.utf8CodeUnitCount
        guard key.range.count == length else { return false }
        let literal = expected.utf8Start
        var at = 0
        while at < length {
            guard bytes[key.range.lowerBound + at] == literal[at] else { return false }
            at += 1
        }
        return true
    }

    /// A string's text once ``strictString()`` has read it (so valid UTF-8): in place when it has no escapes
    /// (the standard library's decoding initializer, which has nothing to repair here), else decoded by
    /// ``text(_:)``.
    func strictText(_ string: RawString) -> String? {
        guard string.hasEscapes else { return String(decoding: UnsafeBufferPointer(rebasing: bytes[string.range]), as: UTF8.self) }
        return try? text(string)
    }

    /// Reads `"key"`, whitespace, `:` and whitespace; returns the key.
    mutating func strictKey() -> RawString? {
        guard strictPeek() == UInt8(ascii: "\""), let key = strictString() else { return nil }
        strictSkipWhitespace()
        guard strictPeek() == UInt8(ascii: ":") else { return nil }
        index += 1
        strictSkipWhitespace()
        return key
    }

    /// Reads a string starting at its opening quote; leaves `index` after the closing quote. `nil` for a raw
    /// control character, an unknown escape, a `\u` without four hex digits, a lone surrogate, bytes that
    /// are not UTF-8, or no closing quote.
    mutating func strictString() -> RawString? {
        index += 1  // "
        let start = index
        let count = bytes.count
        var hasEscapes = false
        var bits: UInt8 = 0
        while index < count {
            // The plain run up to the next quote, backslash or control character, in locals.
            var at = index
            var byte = bytes[at]
            while byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") && byte >= 0x20 {
                bits |= byte
                at += 1
                guard at < count else { return nil }
                byte = bytes[at]
            }
            index = at
            if byte == UInt8(ascii: "\"") {
                let range = start..<index
                index += 1
                if bits >= 0x80, String(validating: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self) == nil {
                    return nil
                }
                return RawString(range: range, hasEscapes: hasEscapes)
            }
            if byte == UInt8(ascii: "\\") {
                hasEscapes = true
                guard index + 1 < count else { return nil }
                switch bytes[index + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index += 2
                case UInt8(ascii: "u"):
                    guard let unit = hex4(index + 2, count) else { return nil }
                    index += 6
                    if unit >= 0xD800 && unit <= 0xDBFF {
                        // A high surrogate must be followed by an escaped low surrogate (cJSON refuses it otherwise).
                        guard index + 6 <= count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u"),
                              let low = hex4(index + 2, count), low >= 0xDC00 && low <= 0xDFFF else { return nil }
                        index += 6
                    } else if unit >= 0xDC00 && unit <= 0xDFFF {
                        return nil
                    }
                default:
                    return nil
                }
                continue
            }
            return nil  // a control character
        }
        return nil
    }

    /// Reads one value inside a container at nesting `level` (so an array or object value is at `level + 1`),
    /// iteratively however deep it nests; leaves `index` after it.
    mutating func strictValue(level: Int) -> Bool {
        switch strictPeek() {
        case UInt8(ascii: "{"), UInt8(ascii: "["): return strictContainer(level: level)
        case nil: return false
        default: return strictScalar()
        }
    }

    /// A string, number, `true`, `false` or `null`.
    mutating func strictScalar() -> Bool {
        guard let byte = strictPeek() else { return false }
        switch byte {
        case UInt8(ascii: "\""): return strictString() != nil
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return strictNumber()
        case UInt8(ascii: "t"): return strictWord("true")
        case UInt8(ascii: "f"): return strictWord("false")
        case UInt8(ascii: "n"): return strictWord("null")
        default: return false
        }
    }

    /// Reads `word` (a literal) at `index`.
    mutating func strictWord(_ word: StaticString) -> Bool {
        let length = word.utf8CodeUnitCount
        guard index + length <= bytes.count else { return false }
        let matches = word.withUTF8Buffer { literal in
            (0..<length).allSatisfy { bytes[index + $0] == literal[$0] }
        }
        index += length
        return matches
    }

    /// A number as RFC 8259 section 6 writes one, `-`? (`0` | [1-9][0-9]*) (`.` [0-9]+)? ([eE] [+-]? [0-9]+)?.
    mutating func strictNumber() -> Bool {
        let count = bytes.count
        @inline(__always) func isDigit(_ at: Int) -> Bool {
            at < count && bytes[at] >= UInt8(ascii: "0") && bytes[at] <= UInt8(ascii: "9")
        }
        @inline(__always) func digits() -> Bool {
            guard isDigit(index) else { return false }
            repeat { index += 1 } while isDigit(index)
            return true
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < count else { return false }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if !digits() {
            return false
        }
        if index < count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() else { return false }
        }
        if index < count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() else { return false }
        }
        return true
    }

    /// Reads the array or object at `index` (at nesting `level + 1`) and everything inside it, without
    /// recursion: which open containers are objects is kept as bits (a `[Bool]` only past 64 open levels).
    mutating func strictContainer(level outer: Int) -> Bool {
        let count = bytes.count
        var level = outer
        var open = 0
        var objects: UInt64 = 0  // bit n: whether the container open at n is an object (n < 64)
        var deeper: [Bool] = []  // the same for the containers open at 64 and deeper
        func topIsObject() -> Bool {
            open <= 64 ? objects & (1 << UInt64(open - 1)) != 0 : deeper[open - 65]
        }
        while true {
            // At the start of a value.
            guard index < count else { return false }
            let byte = bytes[index]
            var closed = false
            if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                level += 1
                guard level <= PayloadValidator.maxNestingDepth else { return false }
                let isObject = byte == UInt8(ascii: "{")
                if open < 64 {
                    if isObject { objects |= 1 << UInt64(open) } else { objects &= ~(1 << UInt64(open)) }
                } else {
                    deeper.append(isObject)
                }
                open += 1
                index += 1
                strictSkipWhitespace()
                guard index < count else { return false }
                if bytes[index] == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    index += 1
                    closed = true
                } else if isObject {
                    guard strictKey() != nil else { return false }
                    continue
                } else {
                    continue
                }
            } else {
                guard strictScalar() else { return false }
            }
            // After a value, or after a container that `closed` just now.
            while true {
                if closed {
                    if open > 64 { deeper.removeLast() }
                    open -= 1
                    level -= 1
                    closed = false
                }
                if open == 0 { return true }
                strictSkipWhitespace()
                guard index < count else { return false }
                let isObject = topIsObject()
                let next = bytes[index]
                if next == UInt8(ascii: ",") {
                    index += 1
                    strictSkipWhitespace()
                    if isObject {
                        guard strictKey() != nil else { return false }
                    }
                    break
                }
                guard next == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { return false }
                index += 1
                closed = true
            }
        }
    }
}
