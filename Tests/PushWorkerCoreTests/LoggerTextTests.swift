import Testing
@testable import PushWorkerCore

/// The `text` log format with values from records: a message id or `type` holding a line feed or a NUL
/// stays on its line, escaped.
@Suite struct LoggerTextTests {
    @Test func plainValuesAreUnchanged() {
        #expect(PushWorkerLogger.textValue("msg-1") == "msg-1")
        #expect(PushWorkerLogger.textValue("two words") == "\"two words\"")
        #expect(PushWorkerLogger.textValue("") == "")
    }

    @Test func controlCharactersAreEscapedInQuotes() {
        #expect(PushWorkerLogger.textValue("id\n2026-12-01T00:00:00.000Z error [pushworker] forged") == #""id\n2026-12-01T00:00:00.000Z error [pushworker] forged""#)
        #expect(PushWorkerLogger.textValue("ok\u{0}evil") == #""ok\u0000evil""#)
        #expect(PushWorkerLogger.textValue("a\rb\u{1B}[31mc\u{7F}") == #""a\rb\u001b[31mc\u007f""#)
        #expect(!PushWorkerLogger.textValue("x\ny").contains("\n"))
    }
}
