extension WorkerRegistry {
    /// Decodes the settings section named `section` of the config file's `workerSettings` as `type`, and
    /// notes the section as read (a section that no registered worker reads is refused at startup).
    ///
    /// A missing section reads as an empty object. Decoding is strict (see ``WorkerSettings``).
    /// ```swift
    /// let settings = try registry.settings(ContentUpdateWorker.Settings.self, section: "content-update")
    /// ```
    /// - Throws: ``WorkerSettingsError`` naming the bad key by its full path, e.g.
    ///   `workerSettings.content-update.baseUrl`.
    public mutating func settings<Settings: Decodable>(_ type: Settings.Type, section: String) throws(WorkerSettingsError) -> Settings {
        settingsSectionsRead.insert(section)
        return try workerSettings.decode(type, section: section)
    }

    /// Builds a ``ConfigurableWorker`` from its settings section and registers it for `type`, replacing an
    /// earlier registration.
    /// - Parameters:
    ///   - workerType: the worker type, e.g. `CachePurgeWorker.self`.
    ///   - type: the payload `type` it runs.
    ///   - section: the `workerSettings` section it reads (default: `type`).
    ///   - name: the result's `worker` field (default: `type`).
    ///   - budget: the worker's budget (default: ``defaultBudget``).
    ///   - maxConcurrent: the most of its jobs running at once (default: no limit of its own).
    ///   - retry: when its retryable failures run again (default: the service's `retries` policy).
    /// - Throws: ``WorkerSettingsError`` when the section does not decode, or, with code
    ///   ``WorkerSettingsError/Code/refusedByWorker`` and the section's path as its key, when the worker's
    ///   `init(settings:)` throws (its error's description is the message), so the user learns which section
    ///   to fix: `config key 'workerSettings.content-update': ContentUpdateWorker refused these settings: …`.
    public mutating func register<W: ConfigurableWorker>(
        _ workerType: W.Type, type: String, section: String? = nil, name: String? = nil, budget: Duration? = nil, maxConcurrent: Int? = nil,
        retry: RetryPolicy? = nil
    ) throws {
        let section = section ?? type
        let settings = try settings(W.Settings.self, section: section)
        let worker: W
        do {
            worker = try W(settings: settings)
        } catch let error as WorkerSettingsError {
            throw error
        } catch {
            throw WorkerSettingsError(.refusedByWorker, key: WorkerSettings.path(section), "\(W.self) refused these settings: \(error)")
        }
        register(type: type, worker: worker, name: name, budget: budget, maxConcurrent: maxConcurrent, retry: retry)
    }
}
