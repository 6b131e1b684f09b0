#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A cursor over the bytes of a JSON text that reads strings exactly and skips values without recursion:
/// the shared core of ``PayloadEnvelope`` (the push's envelope) and ``JSONValue/parse(_:)`` (a whole value).
///
/// It is used only inside a `withUnsafeBufferPointer` closure and never outlives that buffer. Every read
/// is bounds-checked: bytes that are not the JSON they should be give a ``Problem``, never a trap.
package struct JSONScanner {
    package let bytes: UnsafeBufferPointer<UInt8>
    package var index = 0

    package init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Why the bytes could not be read.
    package struct Problem: Error, Equatable {
        /// Human-readable: what was wrong and at which byte.
        package var detail: String

        package init(detail: String) { self.detail = detail }
    }

    package func invalid(_ what: String) -> Problem {
        Problem(detail: "the value is not valid JSON (\(what) at byte \(index))")
    }

    /// Calls `body` for each member of the object starting at `index`, with the key's raw range; `body`
    /// must consume the member's value. Leaves `index` after the closing `}`.
    package mutating func members(_ body: (inout JSONScanner, RawString) throws(Problem) -> Void) throws(Problem) {
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
    package struct RawString {
        package var range: Range<Int>
        package var hasEscapes: Bool

        /// A string whose contents are the bytes in `range`, escaped if `hasEscapes`.
        package init(range: Range<Int>, hasEscapes: Bool) {
            self.range = range
            self.hasEscapes = hasEscapes
        }
    }

    /// Reads a string starting at its opening quote; leaves `index` after the closing quote. `memchr` finds
    /// the next quote and any backslash before it, so long strings (a push's data) are skipped quickly.
    package mutating func string() throws(Problem) -> RawString {
        index += 1  // "
        let start = index
        var hasEscapes = false
        guard let base = bytes.baseAddress else { throw invalid("an unterminated string") }
        while index < bytes.count {
            guard let quote = memchr(base + index, 0x22, bytes.count - index) else { break }
            let quoteAt = base.distance(to: quote.assumingMemoryBound(to: UInt8.self))
            if let backslash = memchr(base + index, 0x5C, quoteAt - index) {
                // An escape: step over the backslash and the character it escapes (maybe a quote).
                hasEscapes = true
                index = base.distance(to: backslash.assumingMemoryBound(to: UInt8.self)) + 2
                continue
            }
            index = quoteAt + 1
            return RawString(range: start..<quoteAt, hasEscapes: hasEscapes)
        }
        throw invalid("an unterminated string")
    }

    /// Whether the key `key` is exactly `expected` once its escapes are decoded.
    package func key(_ key: RawString, equals expected: StaticString) throws(Problem) -> Bool {
        let decoded = key.hasEscapes ? try decode(key) : nil
        return expected.withUTF8Buffer { literal in
            if let decoded { return decoded.elementsEqual(literal) }
            return key.range.count == literal.count && bytes[key.range].elementsEqual(literal)
        }
    }

    /// A string's text, every escape decoded (a string without escapes is read in place, without a copy).
    package func text(_ string: RawString) throws(Problem) -> String {
        let text = string.hasEscapes
            ? String(validating: try decode(string), as: UTF8.self)
            : String(validating: UnsafeBufferPointer(rebasing: bytes[string.range]), as: UTF8.self)
        guard let text else { throw invalid("a string that is not valid UTF-8") }
        return text
    }

    /// The bytes a JSON string stands for (UTF-8), every escape decoded: `\uXXXX` as its UTF-8 encoding
    /// (`\u0000` is a NUL byte), a surrogate pair as one code point.
    package func decode(_ string: RawString) throws(Problem) -> [UInt8] {
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
    package func hex4(_ at: Int, _ end: Int) -> UInt32? {
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
    package mutating func skipValue() throws(Problem) {
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

    package func peek() -> UInt8? {
        index < bytes.count ? bytes[index] : nil
    }

    package mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }
}

extension JSONValue {
    /// Parses one JSON text (RFC 8259) into a value, iteratively: its nesting is bounded only by memory
    /// (Foundation's `JSONDecoder` stops at 512 levels; a push may nest up to
    /// `PayloadValidator.maxNestingDepth` (PushWorkerCore)). Strings keep every byte their escapes stand for (`\u0000`
    /// included); a duplicated key keeps its first value, as `JSONDecoder` does. Numbers follow ``JSONValue``:
    /// an integral value that fits in `Int64` is ``int(_:)`` (`1`, `1.0`, `1e2`), any other ``double(_:)``.
    /// - Returns: the value, or `nil` when `bytes` are not one JSON value (whitespace around it allowed).
    package static func parse(_ bytes: [UInt8]) -> JSONValue? {
        bytes.withUnsafeBufferPointer { buffer -> JSONValue? in
            var scanner = JSONScanner(buffer)
            return try? scanner.parseDocument()
        }
    }
}

extension JSONScanner {
    /// An array or object being built, with the key its next value goes to.
    private enum Frame {
        case array([JSONValue])
        case object([String: JSONValue], key: String)
    }

    /// Parses the whole text as one value (see ``JSONValue/parse(_:)``).
    package mutating func parseDocument() throws(Problem) -> JSONValue {
        var stack: [Frame] = []
        while true {
            skipWhitespace()
            var value: JSONValue
            switch peek() {
            case UInt8(ascii: "{"):
                index += 1
                skipWhitespace()
                if peek() == UInt8(ascii: "}") {
                    index += 1
                    value = .object([:])
                } else {
                    stack.append(.object([:], key: try memberKey()))
                    continue
                }
            case UInt8(ascii: "["):
                index += 1
                skipWhitespace()
                if peek() == UInt8(ascii: "]") {
                    index += 1
                    value = .array([])
                } else {
                    stack.append(.array([]))
                    continue
                }
            default:
                value = try scalar()
            }
            // Hand the value to the containers it completes, innermost first.
            attach: while true {
                guard let top = stack.popLast() else {
                    skipWhitespace()
                    guard index == bytes.count else { throw invalid("unexpected data after the value") }
                    return value
                }
                skipWhitespace()
                switch top {
                case .array(var items):
                    items.append(value)
                    switch peek() {
                    case UInt8(ascii: ","):
                        index += 1
                        stack.append(.array(items))
                        break attach
                    case UInt8(ascii: "]"):
                        index += 1
                        value = .array(items)
                    default:
                        throw invalid("expected ',' or ']'")
                    }
                case .object(var members, let key):
                    if members[key] == nil { members[key] = value }  // the first one, as JSONDecoder keeps
                    switch peek() {
                    case UInt8(ascii: ","):
                        index += 1
                        skipWhitespace()
                        stack.append(.object(members, key: try memberKey()))
                        break attach
                    case UInt8(ascii: "}"):
                        index += 1
                        value = .object(members)
                    default:
                        throw invalid("expected ',' or '}'")
                    }
                }
            }
        }
    }

    /// Reads `"key":` and returns the key.
    private mutating func memberKey() throws(Problem) -> String {
        guard peek() == UInt8(ascii: "\"") else { throw invalid("expected a key") }
        let key = try text(try string())
        skipWhitespace()
        guard peek() == UInt8(ascii: ":") else { throw invalid("expected ':'") }
        index += 1
        return key
    }



    /// Whether `token` is a number as RFC 8259 section 6 writes one: `-`? (`0` | [1-9][0-9]*) (`.` [0-9]+)?
    /// ([eE] [+-]? [0-9]+)? (Swift's `Double(_:)` also reads `0x1p3`, `1.` and `00`).
    package static func isNumber(_ token: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        var at = token.startIndex
        let end = token.endIndex
        func digits() -> Int {
            let from = at
            while at < end, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(token[at]) { at += 1 }
            return at - from
        }
        if at < end, token[at] == UInt8(ascii: "-") { at += 1 }
        guard at < end else { return false }
        if token[at] == UInt8(ascii: "0") { at += 1 } else if digits() == 0 { return false }
        if at < end, token[at] == UInt8(ascii: ".") {
            at += 1
            guard digits() > 0 else { return false }
        }
        if at < end, token[at] == UInt8(ascii: "e") || token[at] == UInt8(ascii: "E") {
            at += 1
            if at < end, token[at] == UInt8(ascii: "+") || token[at] == UInt8(ascii: "-") { at += 1 }
            guard digits() > 0 else { return false }
        }
        return at == end
    }

    /// A string, number, `true`, `false` or `null`.
    private mutating func scalar() throws(Problem) -> JSONValue {
        if peek() == UInt8(ascii: "\"") { return .string(try text(try string())) }
        let start = index
        try skipValue()
        let token = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        switch token {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null": return .null
        default:
            guard Self.isNumber(bytes[start..<index]), let number = Double(token) else {
                throw invalid("a malformed value")
            }
            if let integer = Int64(token) { return .int(integer) }
            // 2^63 is exactly representable; anything below it in magnitude that is integral fits Int64.
            if number.isFinite, number == number.rounded(), abs(number) < 9_223_372_036_854_775_808.0 {
                return .int(Int64(number))
            }
            return .double(number)
        }
    }
}
