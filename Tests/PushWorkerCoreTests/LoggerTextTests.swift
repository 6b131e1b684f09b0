import Testing
@testable import PushWorkerCore

/// The `text` log format with values from records: a message id or `type` holding a line feed or a NUL
/// stays on its line, escaped.
@Suite struct LoggerTextTests {
    @Test func plainValuesAreUnchanged() {
        #expect(Logger.textValue("msg-1") == "msg-1")
        #expect(Logger.textValue("two words") == "\"two words\"")
        #expect(Logger.textValue("") == "")
    }

    @Test func controlCharactersAreEscapedInQuotes() {
        #expect(Logger.textValue("id\n2026-12-01T00:00:00.000Z error [pushworker] forged") == #""id\n2026-12-01T00:00:00.000Z error [pushworker] forged""#)
        #expect(Logger.textValue("ok\u{0}evil") == #""ok\u0000evil""#)
        #expect(Logger.textValue("a\rb\u{1B}[31mc\u{7F}") == #""a\rb\u001b[31mc\u007f""#)
        #expect(!Logger.textValue("x\ny").contains("\n"))
    }
}
