import PushWorkerCore
import PushWorkerKafka

extension PushWorkerLogger {
    /// A handler that writes librdkafka's logs and errors to this logger, mapping syslog severities:
    /// 0–3 error, 4 warning, 5 notice, 6 info, 7 debug.
    public var kafkaLogHandler: KafkaLogHandler {
        let logger = self
        return { message in
            let level: PushWorkerLogger.Level = switch message.severity {
            case ...3: .error
            case 4: .warning
            case 5: .notice
            case 6: .info
            default: .debug
            }
            logger.log(level, message.message, metadata: ["facility": message.facility, "client": message.client])
        }
    }
}
