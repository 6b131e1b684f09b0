import PushWorkerAPI

/// Drops the pushed cache keys: `newData` when it dropped any, `noData` / `nothingToPurge` when none was
/// held, `failed` / `tooManyKeys` for more than ``maxKeys`` keys (nothing is dropped then).
///
/// A payload without a `keys` array of strings is `failed` / `invalidPayload` (``TypedWorker`` decodes it).
public struct CachePurgeWorker: TypedWorker {
    /// The most keys one push may purge: 100.
    public static let maxKeys = 100

    /// The cache purged.
    public let store: CacheStore

    /// Creates the worker for `store`.
    public init(store: CacheStore) {
        self.store = store
    }

    /// Drops `payload.keys` from the store.
    public func perform(_ payload: CachePurge, job: Job) async throws -> WorkerOutcome {
        guard payload.keys.count <= Self.maxKeys else {
            return .failed("tooManyKeys", detail: "\(payload.keys.count) keys, at most \(Self.maxKeys)")
        }
        try Task.checkCancellation()
        return store.remove(payload.keys) > 0 ? .newData : WorkerOutcome(.noData, reason: "nothingToPurge")
    }
}
