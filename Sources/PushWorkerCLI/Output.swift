import Foundation
import PushWorkerCore
import Synchronization

/// Unbuffered, line-at-a-time writes to stdout and stderr, safe from any thread.
///
/// When stdout is closed or its reader has gone (`pushworker results ... | head -1`), the command ends
/// quietly, as `cat` does: by SIGPIPE's default action (exit status 141 in a shell) for a broken pipe,
/// with status 1 for any other write error. A failed write to stderr is dropped and counted
/// (``PushWorkerLogger/droppedLineCount``).
package enum Output {
    private static let lock = Mutex(())

    /// Writes one line to stdout at once (a `write(2)`, so a reader of a pipe sees it immediately).
    package static func line(_ text: String) {
        var bytes = Array(text.utf8)
        bytes.append(0x0A)
        write(bytes)
    }

    /// Writes raw bytes and a newline to stdout.
    package static func line(bytes: [UInt8]) {
        var bytes = bytes
        bytes.append(0x0A)
        write(bytes)
    }

    private static func write(_ bytes: [UInt8]) {
        guard let failure = lock.withLock({ _ in StandardStream.output.write(bytes) }) else { return }
        if failure.isBrokenPipe { ProcessSignals.endByDefaultAction(SIGPIPE) }
        error("pushworker: cannot write to stdout: \(String(cString: strerror(failure.errorNumber)))")  // NUL-safe: strerror's own text
        _exit(1)
    }

    /// `value` as JSON text with sorted keys and unescaped slashes (one line, or indented when `pretty`),
    /// as the commands print JSON.
    static func json(_ value: JSONValue, pretty: Bool = false) -> String {
        value.jsonText(pretty: pretty)
    }

    /// Writes one line to stderr.
    package static func error(_ text: String) {
        if StandardStream.error.writeLine(text) != nil { PushWorkerLogger.countDroppedLine() }
    }
}
