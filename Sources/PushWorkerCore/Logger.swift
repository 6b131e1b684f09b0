import Foundation
import Synchronization

/// A small structured logger writing one line per message to stderr.
///
/// Levels follow swift-log's names. The process-wide level and format are set once at startup with
/// ``Logger/bootstrap(level:format:)``; the default is `info` in `text` format.
public struct Logger: Sendable {
    /// Severity, lowest first.
    public enum Level: String, Sendable, Comparable, CaseIterable {
        case trace, debug, info, notice, warning, error, critical
        var rank: Int { Self.allCases.firstIndex(of: self) ?? 0 }
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rank < rhs.rank }
    }

    /// Line format: `text` (`2026-11-30T10:16:48.123Z warning [label] message key=value`) or `json`
    /// (one JSON object per line with `time`, `level`, `label`, `message` and the metadata).
    public enum Format: String, Sendable, CaseIterable {
        case text, json
    }

    /// Where the lines go; replaceable for tests.
    public typealias Sink = @Sendable (String) -> Void

    private struct Settings: Sendable {
        var level: Level = .info
        var format: Format = .text
        var sink: Sink = Logger.standardErrorSink
    }
    private static let settings = Mutex(Settings())
    private static let levelRank = Atomic<Int>(Level.info.rank)
    private static let dropped = Atomic<Int>(0)

    /// The default sink: one `write(2)` per line to stderr. A line that cannot be written (stderr closed
    /// with `2>&-`, or a pipe whose reader has gone) is dropped and counted in ``droppedLineCount``; the
    /// process goes on.
    public static let standardErrorSink: Sink = { line in
        if StandardStream.error.writeLine(line) != nil { countDroppedLine() }
    }

    /// Log lines (and command-line error messages) that could not be written to stderr since the process
    /// started (exported as `pushworker_log_lines_dropped_total`).
    public static var droppedLineCount: Int { dropped.load(ordering: .relaxed) }

    /// Counts one line that could not be written.
    public static func countDroppedLine() {
        dropped.add(1, ordering: .relaxed)
    }

    /// The component name shown in each line, e.g. `pushworker.pipeline`.
    public var label: String

    /// Creates a logger for a component.
    public init(label: String) { self.label = label }

    /// Sets the process-wide level and format (and, for tests, the sink; default ``standardErrorSink``).
    public static func bootstrap(level: Level, format: Format = .text, sink: Sink? = nil) {
        settings.withLock { settings in
            settings.level = level
            settings.format = format
            if let sink { settings.sink = sink }
        }
        levelRank.store(level.rank, ordering: .relaxed)
    }

    /// Whether messages at `level` are written.
    @inline(__always)
    public func isEnabled(_ level: Level) -> Bool { level.rank >= Self.levelRank.load(ordering: .relaxed) }

    /// Writes `message` at `level` with `metadata`, if the level is enabled.
    public func log(_ level: Level, _ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) {
        guard isEnabled(level) else { return }
        let (format, sink) = Self.settings.withLock { ($0.format, $0.sink) }
        let time = Clock.rfc3339(ms: Clock.nowMs())
        let text = message()
        let fields = metadata().sorted { $0.key < $1.key }
        switch format {
        case .text:
            var line = "\(time) \(level.rawValue) [\(label)] \(Self.hasControlCharacter(text) ? Self.escaped(text) : text)"
            for (key, value) in fields { line += " \(key)=\(Self.textValue(value))" }
            sink(line)
        case .json:
            var out = JSONWriter()
            out.raw("{\"time\":\"\(time)\",\"level\":\"\(level.rawValue)\",\"label\":")
            out.string(label)
            out.raw(",\"message\":")
            out.string(text)
            for (key, value) in fields {
                out.raw(",")
                out.string(key)
                out.raw(":")
                out.string(value)
            }
            out.raw("}")
            sink(String(decoding: out.bytes, as: UTF8.self))
        }
    }

    /// A metadata value as the `text` format writes it: as is; in quotes when it holds a space; JSON-escaped
    /// in quotes when it holds a control character (a message id or `type` from a record may hold a line
    /// feed or a NUL, which must not start a forged log line or reach the terminal raw).
    static func textValue(_ value: String) -> String {
        if hasControlCharacter(value) { return escaped(value) }
        return value.contains(" ") ? "\"\(value)\"" : value
    }

    static func hasControlCharacter(_ text: String) -> Bool {
        text.utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }

    /// `text` as a quoted JSON string (control characters as escapes, DEL as `\u007f`).
    static func escaped(_ text: String) -> String {
        var out = JSONWriter()
        out.string(text)
        return String(decoding: out.bytes, as: UTF8.self).replacingOccurrences(of: "\u{7F}", with: "\\u007f")
    }

    /// Writes at `debug`.
    public func debug(_ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) { log(.debug, message(), metadata: metadata()) }
    /// Writes at `info`.
    public func info(_ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) { log(.info, message(), metadata: metadata()) }
    /// Writes at `notice`.
    public func notice(_ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) { log(.notice, message(), metadata: metadata()) }
    /// Writes at `warning`.
    public func warning(_ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) { log(.warning, message(), metadata: metadata()) }
    /// Writes at `error`.
    public func error(_ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) { log(.error, message(), metadata: metadata()) }
}
