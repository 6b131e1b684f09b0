/// A worker built from settings of its own, read from its section of the config file's `workerSettings`
/// object (``WorkerSettings``) by ``WorkerRegistry/register(_:type:section:name:budget:maxConcurrent:)``.
///
/// ```swift
/// struct CachePurgeWorker: ConfigurableWorker {
///     struct Settings: Decodable, Sendable { var cacheURL: URL; var timeout: Duration? }
///     init(settings: Settings) throws { ... }
///     func perform(_ job: Job) async throws -> WorkerOutcome { ... }
/// }
/// // config: workerSettings: { "cache-purge": { cacheURL: "http://cache:8080", timeout: 2500 } }
/// try registry.register(CachePurgeWorker.self, type: "cache-purge")
/// ```
/// The settings are decoded strictly (see ``WorkerSettings``): an unknown key, a missing key or a value of
/// the wrong type stops startup with the key's path.
public protocol ConfigurableWorker: Worker {
    /// The worker's settings: a `Decodable` type whose keys are the keys of its section.
    associatedtype Settings: Decodable & Sendable

    /// Creates the worker from its settings.
    /// - Throws: any error to refuse to start (e.g. a setting out of the range the worker accepts); the
    ///   command line reports it and exits with status 1.
    init(settings: Settings) throws
}
