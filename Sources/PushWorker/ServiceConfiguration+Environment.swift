import Foundation
import PushWorkerKafka

extension ServiceConfiguration {
    /// Environment variables read over the file: the name and what it sets.
    public static let environmentOverrides: [(name: String, sets: String)] = [
        ("PUSHWORKER_BOOTSTRAP_SERVERS", "kafka.\"bootstrap.servers\""),
        ("PUSHWORKER_GROUP_ID", "groupId"),
        ("PUSHWORKER_INPUT_TOPICS", "inputTopics (comma-separated)"),
        ("PUSHWORKER_RESULTS_TOPIC", "resultsTopic"),
        ("PUSHWORKER_DEAD_LETTER_TOPIC", "deadLetter.topic (turns the dead-letter topic on)"),
        ("PUSHWORKER_MAX_IN_FLIGHT", "maxInFlight"),
        ("PUSHWORKER_LOG_LEVEL", "log.level"),
        ("PUSHWORKER_LOG_FORMAT", "log.format"),
        ("PUSHWORKER_HTTP_ENABLED", "httpServer.enabled (true or false)"),
        ("PUSHWORKER_HTTP_HOST", "httpServer.host"),
        ("PUSHWORKER_HTTP_PORT", "httpServer.port (0 = any free port)"),
        ("PUSHWORKER_STATUS_PAGE_ENABLED", "statusPage.enabled (true or false): the status page, /status.json and status publishing"),
        ("PUSHWORKER_EXACTLY_ONCE", "exactlyOnce.enabled (true or false)"),
        ("PUSHWORKER_CRASH_GUARD", "crashGuard.enabled (true or false)"),
        ("PUSHWORKER_TRANSACTIONAL_ID", "exactlyOnce.transactionalId (this member's transactional.id, stable across its restarts)"),
        ("PUSHWORKER_GROUP_INSTANCE_ID", "consumer.\"group.instance.id\" (static membership, e.g. the pod name)"),
        ("PUSHWORKER_MEMBER_PER_TOPIC", "a consumer-group member per subscribed topic (true or false)"),
        ("PUSHWORKER_KAFKA_<NAME>", "kafka.\"<name>\" (and consumer/producer where the file sets it): any librdkafka property, upper-case with '_' for '.' (e.g. PUSHWORKER_KAFKA_SASL_PASSWORD)"),
    ]

    /// The prefix of environment variables that set librdkafka properties: `PUSHWORKER_KAFKA_SASL_PASSWORD`
    /// sets `sasl.password` in `kafka` (for secrets from a Kubernetes Secret or a systemd credential file).
    public static let kafkaPropertyEnvironmentPrefix = "PUSHWORKER_KAFKA_"

    /// The librdkafka property an environment variable names: `PUSHWORKER_KAFKA_SSL_CA_LOCATION` →
    /// `ssl.ca.location`; `nil` for any other variable.
    public static func kafkaProperty(forEnvironmentVariable name: String) -> String? {
        guard name.hasPrefix(kafkaPropertyEnvironmentPrefix), name.count > kafkaPropertyEnvironmentPrefix.count else { return nil }
        return name.dropFirst(kafkaPropertyEnvironmentPrefix.count).lowercased().replacingOccurrences(of: "_", with: ".")
    }

    /// Applies the environment overrides (``environmentOverrides``) over the file's values.
    /// - Throws: ``ConfigurationError`` naming the variable.
    mutating func applyEnvironment(_ environment: [String: String]) throws {
        if let value = environment["PUSHWORKER_BOOTSTRAP_SERVERS"], !value.isEmpty { kafka["bootstrap.servers"] = value }
        if let value = environment["PUSHWORKER_GROUP_ID"], !value.isEmpty { groupId = value }
        if let value = environment["PUSHWORKER_INPUT_TOPICS"], !value.isEmpty {
            inputTopics = value.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        if let value = environment["PUSHWORKER_RESULTS_TOPIC"], !value.isEmpty { resultsTopic = value }
        if let value = environment["PUSHWORKER_DEAD_LETTER_TOPIC"], !value.isEmpty {
            if deadLetter == nil { deadLetter = DeadLetterConfiguration(topic: value) } else { deadLetter?.topic = value }
        }
        if let value = environment["PUSHWORKER_MAX_IN_FLIGHT"], !value.isEmpty {
            guard let number = Int(value), number >= 1 else {
                throw ConfigurationError(.invalidValue, key: "PUSHWORKER_MAX_IN_FLIGHT", "must be an integer of at least 1, got '\(value)'")
            }
            maxInFlight = number
        }
        if let value = environment["PUSHWORKER_LOG_LEVEL"], !value.isEmpty { logLevel = try Self.parseLevel(value, key: "PUSHWORKER_LOG_LEVEL") }
        if let value = environment["PUSHWORKER_LOG_FORMAT"], !value.isEmpty { logFormat = try Self.parseFormat(value, key: "PUSHWORKER_LOG_FORMAT") }
        if let value = environment["PUSHWORKER_HTTP_ENABLED"], !value.isEmpty {
            switch value.lowercased() {
            case "true", "1", "yes": httpServer.enabled = true
            case "false", "0", "no": httpServer.enabled = false
            default: throw ConfigurationError(.invalidValue, key: "PUSHWORKER_HTTP_ENABLED", "must be true or false, got '\(value)'")
            }
        }
        if let value = environment["PUSHWORKER_STATUS_PAGE_ENABLED"], !value.isEmpty {
            switch value.lowercased() {
            case "true", "1", "yes": statusPage.enabled = true
            case "false", "0", "no": statusPage.enabled = false
            default: throw ConfigurationError(.invalidValue, key: "PUSHWORKER_STATUS_PAGE_ENABLED", "must be true or false, got '\(value)'")
            }
        }
        if let value = environment["PUSHWORKER_HTTP_HOST"], !value.isEmpty { httpServer.host = value }
        if let value = environment["PUSHWORKER_HTTP_PORT"], !value.isEmpty {
            guard let number = Int(value), (0...65_535).contains(number) else {
                throw ConfigurationError(.invalidValue, key: "PUSHWORKER_HTTP_PORT", "must be a port number from 0 to 65535 (0 = any free port), got '\(value)'")
            }
            httpServer.port = UInt16(clamping: number)  // 0…65535: exact
        }
        if let value = environment["PUSHWORKER_CRASH_GUARD"], !value.isEmpty {
            switch value.lowercased() {
            case "true", "1", "yes": crashGuard.enabled = true
            case "false", "0", "no": crashGuard.enabled = false
            default: throw ConfigurationError(.invalidValue, key: "PUSHWORKER_CRASH_GUARD", "must be true or false, got '\(value)'")
            }
        }
        if let value = environment["PUSHWORKER_EXACTLY_ONCE"], !value.isEmpty {
            switch value.lowercased() {
            case "true", "1", "yes": exactlyOnce.enabled = true
            case "false", "0", "no": exactlyOnce.enabled = false
            default: throw ConfigurationError(.invalidValue, key: "PUSHWORKER_EXACTLY_ONCE", "must be true or false, got '\(value)'")
            }
        }
        if let value = environment["PUSHWORKER_TRANSACTIONAL_ID"], !value.isEmpty { exactlyOnce.transactionalId = value }
        if let value = environment["PUSHWORKER_GROUP_INSTANCE_ID"], !value.isEmpty { consumer["group.instance.id"] = value }
        if let value = environment["PUSHWORKER_MEMBER_PER_TOPIC"], !value.isEmpty {
            switch value.lowercased() {
            case "true", "1", "yes": memberPerTopic = true
            case "false", "0", "no": memberPerTopic = false
            default: throw ConfigurationError(.invalidValue, key: "PUSHWORKER_MEMBER_PER_TOPIC", "must be true or false, got '\(value)'")
            }
        }
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) {
            guard let property = Self.kafkaProperty(forEnvironmentVariable: name), !value.isEmpty else { continue }
            do {
                try KafkaConfiguration([property: value]).validate()
            } catch let error as KafkaError {
                throw ConfigurationError(.kafkaProperty, key: name, "sets librdkafka property '\(property)': \(error.message)")
            }
            kafka[property] = value
            // The environment wins over the file everywhere the file set the property.
            if consumer[property] != nil { consumer[property] = value }
            if producer[property] != nil { producer[property] = value }
        }
    }
}
