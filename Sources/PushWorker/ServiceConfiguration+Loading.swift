import Foundation

extension ServiceConfiguration {
    /// Loads a configuration: built-in defaults, then the JSON5 file at `path` (if any), then the
    /// environment overrides (``environmentOverrides``).
    ///
    /// - Throws: ``ConfigurationError`` naming the bad key (unknown keys are refused, so typos are caught).
    public static func load(path: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ServiceConfiguration {
        var configuration = ServiceConfiguration()
        if let path {
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw ConfigurationError(.unreadable, key: nil, "cannot read the config file \(path): \(error.localizedDescription)")
            }
            return try load(json5: data, file: path, environment: environment)
        }
        try configuration.applyEnvironment(environment)
        try configuration.check()
        return configuration
    }

    /// Loads a configuration from a JSON5 document in memory, as ``load(path:environment:)`` does from a
    /// file: built-in defaults, then the document, then the environment overrides, then the checks.
    /// - Parameter file: how messages name the document (default `the config`).
    /// - Throws: ``ConfigurationError`` naming the bad key.
    public static func load(json5 data: Data, file: String = "the config", environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ServiceConfiguration {
        var configuration = ServiceConfiguration()
        try configuration.apply(json5: data, file: file, environment: environment)
        try configuration.applyEnvironment(environment)
        try configuration.check()
        return configuration
    }
}
