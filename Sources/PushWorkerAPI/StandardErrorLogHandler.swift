/// The default ``PushWorkerLogHandler``: one line per message, with the wall-clock time (RFC 3339 UTC with
/// milliseconds), to a sink (``PushWorkerLogger/standardErrorSink`` unless a test gives another).
///
/// - `text`: `2026-11-30T10:16:48.123Z warning [label] message key=value`, metadata sorted by key; a value
///   holding a space is quoted, and a message or value holding a control character is written as a quoted
///   JSON string, so a line feed from a record cannot forge a log line.
/// - `json`: one object per line with `time`, `level`, `label`, `message` and the metadata keys.
public struct StandardErrorLogHandler: PushWorkerLogHandler {
    /// The line format.
    public var format: PushWorkerLogger.Format
    /// Where the lines go.
    public var sink: PushWorkerLogger.Sink

    /// Creates the handler.
    /// - Parameters:
    ///   - format: `text` (default) or `json`.
    ///   - sink: where lines go (default ``PushWorkerLogger/standardErrorSink``: stderr, a line that cannot be
    ///     written dropped and counted in ``PushWorkerLogger/droppedLineCount``).
    public init(format: PushWorkerLogger.Format = .text, sink: @escaping PushWorkerLogger.Sink = PushWorkerLogger.standardErrorSink) {
        self.format = format
        self.sink = sink
    }

    /// Formats the message as one line and hands it to ``sink``.
    public func log(level: PushWorkerLogger.Level, label: String, message text: String, metadata: PushWorkerLogger.Metadata) {
        let time = WallClock.rfc3339(ms: WallClock.nowMs())
        let fields = metadata.sorted { $0.key < $1.key }
        switch format {
        case .text:
            var line = "\(time) \(level.rawValue) [\(label)] \(PushWorkerLogger.hasControlCharacter(text) ? PushWorkerLogger.escaped(text) : text)"
            for (key, value) in fields { line += " \(key)=\(PushWorkerLogger.textValue(value))" }
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
}
