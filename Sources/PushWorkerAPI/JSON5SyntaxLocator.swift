/// Finds where a JSON5 document stops being valid: the line, the column and the key path, for the message
/// of a configuration file Foundation's `JSONDecoder` refused (its errors carry no position on Linux).
///
/// It is a small recursive-descent checker of JSON5 (spec 1.0.0): objects and arrays with trailing commas,
/// keys as strings or identifiers, single- or double-quoted strings with escapes and line continuations,
/// numbers (hexadecimal, leading or trailing decimal point, `+`, `Infinity`, `NaN`), `true`, `false`,
/// `null`, `//` and `/* */` comments. It builds no value; the document is decoded by `JSONDecoder` alone.
/// It runs *before* that decoder, and a document it refuses never reaches it: Foundation's JSON5 scanner
/// traps (a crash, not a thrown error) on some invalid numbers, e.g. `0x1E-5`, a hexadecimal number whose
/// last digit `E` it takes for an exponent (found by FuzzConfiguration). Nesting is limited to
/// ``maxDepth`` levels.
package struct JSON5SyntaxLocator {
    /// Where and why the document is not valid JSON5.
    package struct Problem: Error, Equatable, CustomStringConvertible {
        /// 1-based line (lines end at LF; a CR LF counts once).
        package var line: Int
        /// 1-based column, counted in Unicode scalars.
        package var column: Int
        /// The key path of the member being read, e.g. `workers.ping.kind`, or `workers[2]` inside an
        /// array; empty at the top level.
        package var keyPath: String
        /// What was expected, e.g. `expected ',' or '}' after the value of 'groupId'`.
        package var reason: String

        /// Creates a problem at a position.
        package init(line: Int, column: Int, keyPath: String, reason: String) {
            self.line = line
            self.column = column
            self.keyPath = keyPath
            self.reason = reason
        }

        package var description: String {
            "line \(line), column \(column)" + (keyPath.isEmpty ? "" : " (at \(keyPath))") + ": \(reason)"
        }
    }

    /// The deepest nesting checked; deeper documents report a problem there.
    package static let maxDepth = 512

    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var path: [String] = []

    private init(_ text: String) { scalars = Array(text.unicodeScalars) }

    /// The first problem of `text`, or `nil` when it is valid JSON5 by these rules.
    package static func locate(_ text: String) -> Problem? {
        var locator = JSON5SyntaxLocator(text)
        do throws(Problem) {
            try locator.skipSpace()
            guard locator.index < locator.scalars.count else { throw locator.problem("the file is empty; expected a JSON5 object such as { }") }
            try locator.value(depth: 0)
            try locator.skipSpace()
            if locator.index < locator.scalars.count {
                throw locator.problem("unexpected \(locator.describeCurrent()) after the end of the top-level value")
            }
            return nil
        } catch {
            return error
        }
    }

    private var current: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

    private func describeCurrent() -> String {
        guard let scalar = current else { return "end of file" }
        switch scalar {
        case "\n": return "end of line"
        case "\t": return "tab"
        default: return scalar.value < 0x20 || scalar.value == 0x7F ? "control character U+\(String(scalar.value, radix: 16, uppercase: true))" : "'\(Character(scalar))'"
        }
    }

    private func problem(_ reason: String, at position: Int? = nil) -> Problem {
        let end = min(position ?? index, scalars.count)
        var line = 1
        var column = 1
        for scalar in scalars[0..<end] {
            if scalar == "\n" {
                line += 1
                column = 1
            } else if scalar != "\r" {
                column += 1
            }
        }
        return Problem(line: line, column: column, keyPath: keyPath, reason: reason)
    }

    private var keyPath: String {
        path.reduce(into: "") { joined, part in
            if part.hasPrefix("[") || joined.isEmpty { joined += part } else { joined += "." + part }
        }
    }

    private mutating func skipSpace() throws(Problem) {
        while let scalar = current {
            if scalar == "/" && index + 1 < scalars.count && scalars[index + 1] == "/" {
                while let next = current, next != "\n" { index += 1 }
            } else if scalar == "/" && index + 1 < scalars.count && scalars[index + 1] == "*" {
                let start = index
                index += 2
                while index + 1 < scalars.count, !(scalars[index] == "*" && scalars[index + 1] == "/") { index += 1 }
                guard index + 1 < scalars.count else { throw problem("the /* comment is not closed with */", at: start) }
                index += 2
            } else if scalar.properties.isWhitespace || scalar == "\u{FEFF}" {
                index += 1
            } else {
                return
            }
        }
    }

    private mutating func value(depth: Int) throws(Problem) {
        guard depth < Self.maxDepth else { throw problem("nested deeper than \(Self.maxDepth) levels") }
        guard let scalar = current else { throw problem("expected a value, found end of file") }
        switch scalar {
        case "{": try object(depth: depth)
        case "[": try array(depth: depth)
        case "\"", "'": try string()
        case "-", "+", ".", "0"..."9": try number()
        default:
            let start = index
            let word = identifier()
            switch word {
            case "true", "false", "null", "Infinity", "NaN": return
            case "":
                throw problem("expected a value (an object, array, string, number, true, false or null), found \(describeCurrent())")
            default:
                throw problem("'\(word)' is not a value; quote text as a string (\"\(word)\")", at: start)
            }
        }
    }

    private mutating func object(depth: Int) throws(Problem) {
        index += 1  // {
        while true {
            try skipSpace()
            guard let scalar = current else { throw problem("the object is not closed: expected a key or '}', found end of file") }
            if scalar == "}" {
                index += 1
                return
            }
            let key: String
            if scalar == "\"" || scalar == "'" {
                key = try string()
            } else {
                key = identifier()
                guard !key.isEmpty else { throw problem("expected a key (a name or a quoted string) or '}', found \(describeCurrent())") }
            }
            path.append(key)
            try skipSpace()
            guard current == ":" else { throw problem("expected ':' after the key '\(key)', found \(describeCurrent())") }
            index += 1
            try skipSpace()
            try value(depth: depth + 1)
            try skipSpace()
            guard let next = current else {
                throw problem("the object is not closed: expected ',' or '}' after the value of '\(key)', found end of file")
            }
            guard next == "," || next == "}" else {
                throw problem("expected ',' or '}' after the value of '\(key)', found \(describeCurrent())")
            }
            path.removeLast()
            if next == "," { index += 1 }
        }
    }

    private mutating func array(depth: Int) throws(Problem) {
        index += 1  // [
        var element = 0
        while true {
            try skipSpace()
            guard let scalar = current else { throw problem("the array is not closed: expected a value or ']', found end of file") }
            if scalar == "]" {
                index += 1
                return
            }
            path.append("[\(element)]")
            try value(depth: depth + 1)
            try skipSpace()
            guard let next = current else { throw problem("the array is not closed: expected ',' or ']', found end of file") }
            guard next == "," || next == "]" else { throw problem("expected ',' or ']' after an element, found \(describeCurrent())") }
            path.removeLast()
            if next == "," { index += 1 }
            element += 1
        }
    }

    /// Reads a quoted string and returns its text (escapes kept as written, enough for a key path).
    @discardableResult
    private mutating func string() throws(Problem) -> String {
        let quote = scalars[index]
        let start = index
        index += 1
        var text = String.UnicodeScalarView()
        while let scalar = current {
            index += 1
            if scalar == quote { return String(text) }
            if scalar == "\\" {
                guard let escaped = current else { break }
                index += 1
                if escaped == "\r", current == "\n" { index += 1 }
                if escaped == "x" || escaped == "u" {
                    let digits = escaped == "x" ? 2 : 4
                    for _ in 0..<digits {
                        guard let digit = current, digit.properties.isASCIIHexDigit else {
                            throw problem("\\\(escaped) in a string needs \(digits) hexadecimal digits")
                        }
                        index += 1
                    }
                }
                text.append(escaped)
                continue
            }
            if scalar == "\n" || scalar == "\r" {
                throw problem("the string is not closed before the end of the line (end it with \(quote), or escape the line break with \\)", at: index - 1)
            }
            text.append(scalar)
        }
        throw problem("the string opened here is not closed with \(quote)", at: start)
    }

    private mutating func number() throws(Problem) {
        let start = index
        if current == "+" || current == "-" { index += 1 }
        let afterSign = index
        let word = identifier()
        if word == "Infinity" || word == "NaN" { return }
        index = afterSign
        if current == "0", index + 1 < scalars.count, scalars[index + 1] == "x" || scalars[index + 1] == "X" {
            index += 2
            let digits = index
            while let scalar = current, scalar.properties.isASCIIHexDigit { index += 1 }
            guard index > digits else { throw problem("expected hexadecimal digits after 0x") }
        } else {
            var digits = 0
            while let scalar = current, ("0"..."9").contains(scalar) { index += 1; digits += 1 }
            if current == "." {
                index += 1
                while let scalar = current, ("0"..."9").contains(scalar) { index += 1; digits += 1 }
            }
            guard digits > 0 else { throw problem("expected a number", at: start) }
            if current == "e" || current == "E" {
                index += 1
                if current == "+" || current == "-" { index += 1 }
                let exponent = index
                while let scalar = current, ("0"..."9").contains(scalar) { index += 1 }
                guard index > exponent else { throw problem("expected digits in the number's exponent") }
            }
        }
        if let scalar = current, Self.isIdentifierPart(scalar) {
            throw problem("unexpected \(describeCurrent()) in a number")
        }
    }

    /// Reads an identifier (letters, digits, `_`, `$`, anything beyond ASCII; not starting with a digit).
    private mutating func identifier() -> String {
        var text = String.UnicodeScalarView()
        while let scalar = current, Self.isIdentifierPart(scalar), !(text.isEmpty && ("0"..."9").contains(scalar)) {
            text.append(scalar)
            index += 1
        }
        return String(text)
    }

    private static func isIdentifierPart(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "_" || scalar == "$" || scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
            || (scalar.value > 0x7F && !scalar.properties.isWhitespace)
    }
}
