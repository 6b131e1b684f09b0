/// Maps payload `type`s to workers, with an optional default worker for records without a registered
/// `type` (contract section 2, row 5).
///
/// It also carries what Swift workers need at registration: their settings from the config file
/// (``workerSettings``, read with ``settings(_:section:)``) and the registry of their own metrics
/// (``metrics``), served on `/metrics` beside the service's.
public struct WorkerRegistry: Sendable {
    private var workers: [String: RegisteredWorker] = [:]
    /// The worker for records whose `type` is missing or not registered, or `nil` (then they get
    /// `noData` / `noWorker`).
    public private(set) var defaultWorker: RegisteredWorker?
    /// The budget of workers registered without one: 30 s, as iOS gives an app woken by a silent push.
    public var defaultBudget: Duration
    /// The config file's `workerSettings` sections (set by the service's `makeRegistry()`; default none).
    public var workerSettings: WorkerSettings
    /// The sections of ``workerSettings`` read so far by ``settings(_:section:)``; the service refuses to
    /// start when the file has a section no registered worker read.
    public internal(set) var settingsSectionsRead: Set<String> = []
    /// Workers' own metrics, rendered on the service's `/metrics` after its own series. Names starting
    /// `pushworker_` are the service's and refused (``MetricsError/Code/reservedName``), as are duplicates.
    /// Shared by copies of the registry.
    /// ```swift
    /// let purges = try registry.metrics.counter("cache_purges_total", help: "Cache purges, by result.", labels: ["result"])
    /// ```
    public let metrics: MetricsRegistry

    /// The prefix of metric names reserved for the service: `pushworker_`.
    public static let reservedMetricPrefix = "pushworker_"

    /// Creates an empty registry.
    /// - Parameters:
    ///   - defaultBudget: the budget of workers registered without one (default 30 s).
    ///   - workerSettings: the settings sections workers read (default none).
    ///   - metrics: the registry of workers' own metrics (default: a new one refusing names starting
    ///     ``reservedMetricPrefix``).
    public init(defaultBudget: Duration = .seconds(30), workerSettings: WorkerSettings = WorkerSettings(), metrics: MetricsRegistry? = nil) {
        self.defaultBudget = defaultBudget
        self.workerSettings = workerSettings
        self.metrics = metrics ?? MetricsRegistry(reservedPrefix: Self.reservedMetricPrefix)
    }

    /// Registers `worker` for payloads whose `type` is `type`, replacing an earlier registration.
    /// - Parameters:
    ///   - name: the result's `worker` field (default: `type`).
    ///   - budget: the worker's budget (default: ``defaultBudget``), clamped to 1 ms … ``RegisteredWorker/maxBudget``.
    ///   - maxConcurrent: the most of its jobs running at once (default: no limit of its own).
    ///   - retry: when its retryable failures run again (default: the service's `retries` policy).
    public mutating func register(type: String, worker: any Worker, name: String? = nil, budget: Duration? = nil, maxConcurrent: Int? = nil, retry: RetryPolicy? = nil) {
        workers[type] = RegisteredWorker(name: name ?? type, worker: worker, budget: budget ?? defaultBudget, maxConcurrent: maxConcurrent, retry: retry)
    }

    /// Sets the default worker, used for a missing or unregistered `type`.
    /// - Parameter retry: when its retryable failures run again (default: the service's `retries` policy).
    public mutating func setDefault(worker: any Worker, name: String = "default", budget: Duration? = nil, maxConcurrent: Int? = nil, retry: RetryPolicy? = nil) {
        defaultWorker = RegisteredWorker(name: name, worker: worker, budget: budget ?? defaultBudget, maxConcurrent: maxConcurrent, retry: retry)
    }

    /// The registered types, sorted.
    public var types: [String] { workers.keys.sorted() }

    /// The worker registered for `type`, or the default worker, or `nil`.
    @inline(__always)
    public func route(type: String?) -> RegisteredWorker? {
        if let type, let worker = workers[type] { return worker }
        return defaultWorker
    }

    /// The largest budget of any registered worker (for sizing shutdown and rebalance drains).
    public var largestBudget: Duration {
        ([defaultWorker?.budget].compactMap { $0 } + workers.values.map(\.budget)).max() ?? defaultBudget
    }
}
