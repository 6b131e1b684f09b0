import PushWorkerCore

extension ServiceConfiguration {
    /// The log level a configuration value names (`log.level`, `PUSHWORKER_LOG_LEVEL`), case-insensitive.
    /// - Throws: ``ConfigurationError`` naming `key` and the levels.
    static func parseLevel(_ value: String, key: String) throws -> PushWorkerLogger.Level {
        guard let level = PushWorkerLogger.Level(rawValue: value.lowercased()) else {
            throw ConfigurationError(.invalidValue, key: key, "must be one of \(PushWorkerLogger.Level.allCases.map(\.rawValue).joined(separator: ", ")), got '\(value)'")
        }
        return level
    }

    /// The log format a configuration value names (`log.format`, `PUSHWORKER_LOG_FORMAT`): text or json.
    /// - Throws: ``ConfigurationError`` naming `key`.
    static func parseFormat(_ value: String, key: String) throws -> PushWorkerLogger.Format {
        guard let format = PushWorkerLogger.Format(rawValue: value.lowercased()) else {
            throw ConfigurationError(.invalidValue, key: key, "must be text or json, got '\(value)'")
        }
        return format
    }
}
