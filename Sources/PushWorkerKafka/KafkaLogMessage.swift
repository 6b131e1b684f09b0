/// A log line from librdkafka (`log_cb`) or an error it reported (`error_cb`), handed to the application's
/// logger.
public struct KafkaLogMessage: Sendable {
    /// syslog severity as librdkafka reports it: 0 emergency … 3 error, 4 warning, 5 notice, 6 info, 7 debug.
    public var severity: Int32
    /// librdkafka's facility (e.g. `FAIL`, `REQTMOUT`), or `ERROR` for `error_cb` reports.
    public var facility: String
    /// The message text.
    public var message: String
    /// The client's name (`client.id` plus a suffix), e.g. `rdkafka#consumer-1`.
    public var client: String

    /// Creates a message (librdkafka's log and error callbacks make them; tests of handlers too).
    public init(severity: Int32, facility: String, message: String, client: String) {
        self.severity = severity
        self.facility = facility
        self.message = message
        self.client = client
    }
}

/// Receives librdkafka's logs and errors. Called on librdkafka's threads: it must be thread-safe and quick.
public typealias KafkaLogHandler = @Sendable (KafkaLogMessage) -> Void
