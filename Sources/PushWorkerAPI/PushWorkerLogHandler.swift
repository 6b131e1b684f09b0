/// Where pushworker's log messages go: the process-wide handler behind every ``PushWorkerLogger``
/// (swift-log's `LogHandler` role), set with ``PushWorkerLogger/bootstrap(level:handler:)``.
///
/// The default is ``StandardErrorLogHandler``. An application that has swift-log forwards the messages to
/// its own `Logging.Logger` with a handler of a few lines (docs/workers.md, "Logging").
public protocol PushWorkerLogHandler: Sendable {
    /// Writes one message. Called only for levels at or above the process-wide level, on the thread that
    /// logs (a worker's task, a dedicated Kafka thread): it must not block for long.
    /// - Parameters:
    ///   - level: the message's severity.
    ///   - label: the logger's component name, e.g. `pushworker`, `pushworker.kafka`, or
    ///     `pushworker.worker` for a worker's lines through ``Job/logger``.
    ///   - message: the message text, as given (not escaped).
    ///   - metadata: the message's key–value pairs: the logger's ``PushWorkerLogger/metadata`` with the
    ///     line's own merged in (the line's value wins on a key both have); values as given, not escaped.
    func log(level: PushWorkerLogger.Level, label: String, message: String, metadata: PushWorkerLogger.Metadata)
}
