import PushWorkerCore

extension ServiceConfiguration {
    /// Reads the config file's `workerSettings`: an object of sections, each an object. The keys inside a
    /// section are checked when a worker reads it (``WorkerRegistry/settings(_:section:)``).
    /// - Throws: ``ConfigurationError`` (`invalidValue`) naming `workerSettings` or the section that is not
    ///   an object.
    static func parseWorkerSettings(_ value: JSONValue) throws -> WorkerSettings {
        guard case .object(let sections) = value else {
            throw ConfigurationError(.invalidValue, key: WorkerSettings.configKey, "must be an object of settings sections, one per Swift worker, e.g. { \"content-update\": { baseURL: \"https://…\" } }")
        }
        do {
            return try WorkerSettings(sections)
        } catch {
            throw ConfigurationError(error)
        }
    }

    /// Checks that every ``workerSettings`` section was read by a worker of `registry`
    /// (``WorkerRegistry/settingsSectionsRead``), so that a misspelt or stale section is refused at startup
    /// rather than silently ignored.
    /// - Throws: ``ConfigurationError`` (`unknownKey`) naming `workerSettings.<section>`.
    public func checkWorkerSettings(_ registry: WorkerRegistry) throws {
        guard let unread = workerSettings.sectionNames.first(where: { !registry.settingsSectionsRead.contains($0) }) else { return }
        let read = registry.settingsSectionsRead.sorted()
        throw ConfigurationError(.unknownKey, key: WorkerSettings.path(unread),
            "no registered worker reads this settings section (sections read: \(read.isEmpty ? "none" : read.joined(separator: ", "))); remove it or register the worker that reads it")
    }

    /// ``workerSettings`` as `check-config` prints it: each section as in the file, with the string values
    /// of keys that look secret (``isSecretProperty(_:)``: `password`, `secret`, `token`, …) shown as `"*****"`.
    var effectiveWorkerSettings: JSONValue {
        func masked(_ value: JSONValue, secret: Bool) -> JSONValue {
            switch value {
            case .object(let members): .object(Dictionary(uniqueKeysWithValues: members.map { ($0.key, masked($0.value, secret: secret || Self.isSecretProperty($0.key))) }))
            case .array(let elements): .array(elements.map { masked($0, secret: secret) })
            case .string where secret: .string("*****")
            default: value
            }
        }
        return .object(workerSettings.sections.mapValues { masked($0, secret: false) })
    }
}

extension ConfigurationError {
    /// The configuration error of worker settings that do not decode, naming the same key: `unknownKey` for
    /// an unknown key, `invalidValue` otherwise.
    package init(_ error: WorkerSettingsError) {
        self.init(error.code == .unknownKey ? .unknownKey : .invalidValue, key: error.key, error.message)
    }
}
