import Foundation
import Synchronization

/// pushworker's structured logger: a label, swift-log's levels, string metadata (the logger's own
/// ``metadata``, merged with each line's), and a process-wide ``PushWorkerLogHandler`` that writes each
/// message (by default ``StandardErrorLogHandler``: one line per message to stderr, in `text` or `json`
/// format).
///
/// Its shape is swift-log's `Logger` (label, `Level` with the same names, metadata, a handler bootstrapped
/// once per process), so an application that uses swift-log routes pushworker's logs into it with a short
/// ``PushWorkerLogHandler`` adapter (docs/workers.md). The process-wide level and handler are set once at
/// startup with ``bootstrap(level:format:sink:)`` or ``bootstrap(level:handler:)``; the default is `info`
/// to stderr in `text` format. The service itself never bootstraps: the command line does (`run`, `dev`,
/// `redrive`, `bench`), from the configuration's `log` settings.
public struct PushWorkerLogger: Sendable {
    /// Severity, lowest first; the names and order of swift-log's `Logger.Level` (raw values match).
    public enum Level: String, Sendable, Comparable, CaseIterable {
        /// The finest detail, for tracing a problem through the code (e.g. librdkafka's protocol debug lines).
        case trace
        /// Detail for debugging: one line per result, per rebalance step, per librdkafka debug message.
        case debug
        /// Normal operation: start, assignment, stop (the default level).
        case info
        /// A normal but significant event.
        case notice
        /// Something went wrong and was handled: a retried delivery, a worker that ignores cancellation.
        case warning
        /// An operation failed: a record that cannot be produced, a consumer error.
        case error
        /// The service cannot go on.
        case critical
        var rank: Int { Self.allCases.firstIndex(of: self) ?? 0 }
        /// Whether `lhs` is less severe than `rhs`.
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rank < rhs.rank }
    }

    /// Line format of ``StandardErrorLogHandler``: `text`
    /// (`2026-11-30T10:16:48.123Z warning [label] message key=value`) or `json` (one JSON object per line
    /// with `time`, `level`, `label`, `message` and the metadata).
    public enum Format: String, Sendable, CaseIterable {
        /// One line per message: time, level, `[label]`, message, then `key=value` metadata.
        case text
        /// One JSON object per line: `time`, `level`, `label`, `message` and the metadata's keys.
        case json
    }

    /// A message's metadata: key to string value (`messageId`, `type`, `topic`, …). swift-log's
    /// `Logger.Metadata` holds `.string` values of the same keys.
    public typealias Metadata = [String: String]

    /// Where ``StandardErrorLogHandler`` writes its lines; replaceable for tests.
    public typealias Sink = @Sendable (String) -> Void

    private struct Settings: Sendable {
        var format: Format = .text
        var sink: Sink = PushWorkerLogger.standardErrorSink
        var handler: any PushWorkerLogHandler = StandardErrorLogHandler(format: .text, sink: PushWorkerLogger.standardErrorSink)
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

    /// Metadata written with every line of this logger (swift-log's `Logger.metadata`), e.g. the job's
    /// `messageId` and `topic` on ``Job/logger``. A line's own metadata is merged in and wins on a key
    /// both have. Default: none.
    public var metadata: Metadata

    /// Creates a logger for a component.
    /// - Parameters:
    ///   - label: the component name, e.g. `pushworker.pipeline`.
    ///   - metadata: metadata for every line (default: none); see ``metadata``.
    public init(label: String, metadata: Metadata = [:]) {
        self.label = label
        self.metadata = metadata
    }

    /// One key of ``metadata`` (swift-log's `logger[metadataKey: "x"] = "y"`): `nil` when absent; setting
    /// `nil` removes the key.
    public subscript(metadataKey key: String) -> String? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Sets the process-wide level and writes messages with ``StandardErrorLogHandler`` in `format` (and, for
    /// tests, to `sink`; when `nil`, the sink set before, at first ``standardErrorSink``).
    public static func bootstrap(level: Level, format: Format = .text, sink: Sink? = nil) {
        settings.withLock { settings in
            settings.format = format
            if let sink { settings.sink = sink }
            settings.handler = StandardErrorLogHandler(format: settings.format, sink: settings.sink)
        }
        levelRank.store(level.rank, ordering: .relaxed)
    }

    /// Sets the process-wide level and hands every message at or above it to `handler` (e.g. an adapter to
    /// swift-log; docs/workers.md shows one).
    public static func bootstrap(level: Level, handler: some PushWorkerLogHandler) {
        settings.withLock { $0.handler = handler }
        levelRank.store(level.rank, ordering: .relaxed)
    }

    /// Whether messages at `level` are written.
    @inline(__always)
    public func isEnabled(_ level: Level) -> Bool { level.rank >= Self.levelRank.load(ordering: .relaxed) }

    /// Hands `message` at `level` to the process-wide handler, with the logger's ``metadata`` and the
    /// line's `metadata` merged (the line's value wins on a key both have), if the level is enabled (the
    /// autoclosures are not evaluated, and nothing is merged, otherwise).
    public func log(_ level: Level, _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) {
        guard isEnabled(level) else { return }
        let handler = Self.settings.withLock { $0.handler }
        let line = metadata()
        let merged = self.metadata.isEmpty ? line : line.isEmpty ? self.metadata : self.metadata.merging(line) { _, own in own }
        handler.log(level: level, label: label, message: message(), metadata: merged)
    }

    /// A metadata value as the `text` format writes it: as is; in quotes when it holds a space; JSON-escaped
    /// in quotes when it holds a control character (a message id or `type` from a record may hold a line
    /// feed or a NUL, which must not start a forged log line or reach the terminal raw).
    package static func textValue(_ value: String) -> String {
        if hasControlCharacter(value) { return escaped(value) }
        return value.contains(" ") ? "\"\(value)\"" : value
    }

    package static func hasControlCharacter(_ text: String) -> Bool {
        text.utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }

    /// `text` as a quoted JSON string (control characters as escapes, DEL as `\u007f`).
    package static func escaped(_ text: String) -> String {
        var out = JSONWriter()
        out.string(text)
        return String(decoding: out.bytes, as: UTF8.self).replacingOccurrences(of: "\u{7F}", with: "\\u007f")
    }

    /// Writes at `trace`.
    public func trace(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) { log(.trace, message(), metadata: metadata()) }
    /// Writes at `debug`.
    public func debug(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) { log(.debug, message(), metadata: metadata()) }
    /// Writes at `info`.
    public func info(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) { log(.info, message(), metadata: metadata()) }
    /// Writes at `notice`.
    public func notice(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) { log(.notice, message(), metadata: metadata()) }
    /// Writes at `warning`.
    public func warning(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) { log(.warning, message(), metadata: metadata()) }
    /// Writes at `error`.
    public func error(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) { log(.error, message(), metadata: metadata()) }
    /// Writes at `critical`.
    public func critical(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) { log(.critical, message(), metadata: metadata()) }
}
