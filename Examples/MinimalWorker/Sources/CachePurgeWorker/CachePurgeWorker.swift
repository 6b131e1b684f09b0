import PushWorkerAPI

/// Drops the pushed cache keys: `newData` when it dropped any, `noData` / `nothingToPurge` when none was
/// held, `failed` / `tooManyKeys` for more than ``maxKeysPerPush`` keys (nothing is dropped then).
///
/// A payload without a `keys` array of strings is `failed` / `invalidPayload` (``TypedWorker`` decodes it).
/// As a ``ConfigurableWorker`` it is built from its `workerSettings` section, e.g.
/// `"cache-purge": { maxKeys: 20 }` (``Settings``).
public struct CachePurgeWorker: TypedWorker, ConfigurableWorker {
    /// The worker's settings section.
    public struct Settings: Decodable, Sendable {
        /// The most keys one push may purge (default ``CachePurgeWorker/maxKeys``), at least 1.
        public var maxKeys: Int?
    }

    /// The default of the most keys one push may purge: 100.
    public static let maxKeys = 100

    /// The cache purged.
    public let store: CacheStore
    /// The most keys one push may purge.
    public let maxKeysPerPush: Int

    /// Creates the worker for `store`.
    /// - Parameter maxKeys: the most keys one push may purge (default 100).
    public init(store: CacheStore, maxKeys: Int = CachePurgeWorker.maxKeys) {
        self.store = store
        self.maxKeysPerPush = maxKeys
    }

    /// Creates the worker with an empty store of its own from its settings.
    /// - Throws: ``SettingsError`` when `maxKeys` is below 1.
    public init(settings: Settings) throws {
        let maxKeys = settings.maxKeys ?? Self.maxKeys
        guard maxKeys >= 1 else { throw SettingsError(description: "maxKeys must be at least 1, got \(maxKeys)") }
        self.init(store: CacheStore(), maxKeys: maxKeys)
    }

    /// Settings the worker refuses.
    public struct SettingsError: Error, CustomStringConvertible, Sendable {
        /// What is wrong.
        public var description: String
    }

    /// Drops `payload.keys` from the store.
    public func perform(_ payload: CachePurge, job: Job) async throws -> WorkerOutcome {
        guard payload.keys.count <= maxKeysPerPush else {
            return .failed("tooManyKeys", detail: "\(payload.keys.count) keys, at most \(maxKeysPerPush)")
        }
        try Task.checkCancellation()
        return store.remove(payload.keys) > 0 ? .newData : WorkerOutcome(.noData, reason: "nothingToPurge")
    }
}
