import Foundation
@testable import PushWorker
import PushWorkerAPI
import Testing

/// Line, column and key path of JSON5 syntax errors in configuration files.
struct JSON5SyntaxLocatorTests {
    @Test("the first problem's position, key path and reason", arguments: [
        ("{\n  groupId: \"g\"\n  workers: {}\n}\n", 3, 3, "groupId", "expected ',' or '}' after the value of 'groupId', found 'w'"),
        ("{\n  workers: { ping: { kind: newData } },\n}", 2, 28, "workers.ping.kind", "'newData' is not a value; quote text as a string (\"newData\")"),
        ("{\n  groupId: \"g\",\n  workers: { ping: { kind: \"noop\" }\n}\n", 5, 1, "workers", "the object is not closed: expected ',' or '}' after the value of 'workers', found end of file"),
        ("{ a: \"x\n}", 1, 8, "a", "the string is not closed before the end of the line (end it with \", or escape the line break with \\)"),
        ("{ a: 1, }}", 1, 10, "", "unexpected '}' after the end of the top-level value"),
        ("{ inputTopics: [\"a\" \"b\"] }", 1, 21, "inputTopics[0]", "expected ',' or ']' after an element, found '\"'"),
        ("{ a /* b */ 1 }", 1, 13, "a", "expected ':' after the key 'a', found '1'"),
        ("{ a: 1 /* open", 1, 8, "a", "the /* comment is not closed with */"),
        ("", 1, 1, "", "the file is empty; expected a JSON5 object such as { }"),
        ("{ a: 0x }", 1, 8, "a", "expected hexadecimal digits after 0x"),
        ("{ \"k\": { 'q': -.5e }, }", 1, 19, "k.q", "expected digits in the number's exponent"),
        ("{ maxInFlight: 0x1E-510 }", 1, 20, "maxInFlight", "expected ',' or '}' after the value of 'maxInFlight', found '-'"),
    ])
    func locates(_ text: String, line: Int, column: Int, keyPath: String, reason: String) {
        #expect(JSON5SyntaxLocator.locate(text) == .init(line: line, column: column, keyPath: keyPath, reason: reason))
    }

    @Test func validJSON5HasNoProblem() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        for file in ["config/pushworker.json5", "deploy/config/pushworker.json5"] {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            #expect(JSON5SyntaxLocator.locate(text) == nil, "\(file)")
        }
        let samples = [
            "{}", "// c\n{ a: 'x\\\ny', b: [1, +2, .5, 5., 0xFF, Infinity, -NaN, true, false, null,], $c_1: \"\\u00e9\\x41\", }",
            "\u{FEFF}{ \"a\": { \"b\": [] } }\r\n", "{ ü: 1 }", "[1, 2]",
        ]
        for sample in samples {
            #expect(JSON5SyntaxLocator.locate(sample) == nil, "\(sample)")
        }
    }

    @Test func theConfigurationErrorCarriesThePositionAndTheKeyPath() {
        do {
            _ = try ServiceConfiguration.load(json5: Data("{\n  groupId: \"g\"\n  workers: {}\n}\n".utf8), file: "pw.json5", environment: [:])
            Issue.record("a syntax error was accepted")
        } catch let error as ConfigurationError {
            #expect(error.code == .syntax)
            #expect(error.key == "groupId")
            #expect(error.description == "pw.json5 is not valid JSON5: line 3, column 3 (at groupId): expected ',' or '}' after the value of 'groupId', found 'w'")
        } catch {
            Issue.record("\(error)")
        }
    }

    /// Foundation's JSON5 scanner traps on a hexadecimal number whose last digit is `E` followed by a sign
    /// (it reads an exponent); found by FuzzConfiguration. Such a document must be refused by the locator
    /// before the decoder sees it, in the config file and in worker settings alike.
    @Test("a hexadecimal number followed by a sign is refused, not decoded", arguments: ["0x1E-510", "0x1e+5", "0xE-5"])
    func hexadecimalNumberWithSignIsRefused(_ number: String) {
        do {
            _ = try ServiceConfiguration.load(json5: Data("{ maxInFlight: \(number) }".utf8), file: "pw.json5", environment: [:])
            Issue.record("\(number) was accepted")
        } catch let error as ConfigurationError {
            #expect(error.code == .syntax)
            #expect(error.key == "maxInFlight")
        } catch {
            Issue.record("\(error)")
        }
        #expect(throws: WorkerSettingsError.self) { try WorkerSettings(json5: "{ s: { n: \(number) } }") }
    }
}
