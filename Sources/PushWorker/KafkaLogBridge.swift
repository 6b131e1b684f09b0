import PushWorkerCore
import PushWorkerKafka

extension PushWorkerLogger {
    /// A handler that writes librdkafka's logs and errors to this logger, mapping syslog severities:
    /// 0–3 error, 4 warning, 5 notice, 6 info, 7 debug.
    ///
    /// Repeated warnings and errors are rate-limited: of one kind (the same librdkafka facility and the same
    /// start of text) at most one is logged every 10 s, and the next one logged says how many were left out
    /// (`suppressed=N` metadata), e.g. the commit refusals of a rebalance.
    public var kafkaLogHandler: KafkaLogHandler {
        kafkaLogHandler(limiter: KafkaLogRateLimiter())
    }

    /// ``kafkaLogHandler`` with a given rate limiter (tests pass one with their own clock).
    func kafkaLogHandler(limiter: KafkaLogRateLimiter) -> KafkaLogHandler {
        let logger = self
        return { message in
            guard let line = Self.kafkaLogLine(message, limiter: limiter) else { return }
            logger.log(line.level, message.message, metadata: line.metadata)
        }
    }

    /// The level and metadata `message` is logged with, or `nil` when the limiter leaves it out.
    static func kafkaLogLine(_ message: KafkaLogMessage, limiter: KafkaLogRateLimiter) -> (level: Level, metadata: Metadata)? {
        guard let suppressed = limiter.admit(message) else { return nil }
        let level: Level = switch message.severity {
        case ...3: .error
        case 4: .warning
        case 5: .notice
        case 6: .info
        default: .debug
        }
        var metadata = ["facility": message.facility, "client": message.client]
        // How many of this kind were left out since the last one logged.
        if suppressed > 0 { metadata["suppressed"] = String(suppressed) }
        return (level, metadata)
    }
}
