/// Maps payload `type`s to workers, with an optional default worker for records without a registered
/// `type` (contract section 2, row 5).
public struct WorkerRegistry: Sendable {
    private var workers: [String: RegisteredWorker] = [:]
    /// The worker for records whose `type` is missing or not registered, or `nil` (then they get
    /// `noData` / `noWorker`).
    public private(set) var defaultWorker: RegisteredWorker?
    /// The budget of workers registered without one: 30 s, as iOS gives an app woken by a silent push.
    public var defaultBudget: Duration

    /// Creates an empty registry.
    /// - Parameter defaultBudget: the budget of workers registered without one (default 30 s).
    public init(defaultBudget: Duration = .seconds(30)) {
        self.defaultBudget = defaultBudget
    }

    /// Registers `worker` for payloads whose `type` is `type`, replacing an earlier registration.
    /// - Parameters:
    ///   - name: the result's `worker` field (default: `type`).
    ///   - budget: the worker's budget (default: ``defaultBudget``), clamped to 1 ms … ``RegisteredWorker/maxBudget``.
    ///   - maxConcurrent: the most of its jobs running at once (default: no limit of its own).
    public mutating func register(type: String, worker: any Worker, name: String? = nil, budget: Duration? = nil, maxConcurrent: Int? = nil) {
        workers[type] = RegisteredWorker(name: name ?? type, worker: worker, budget: budget ?? defaultBudget, maxConcurrent: maxConcurrent)
    }

    /// Sets the default worker, used for a missing or unregistered `type`.
    public mutating func setDefault(worker: any Worker, name: String = "default", budget: Duration? = nil, maxConcurrent: Int? = nil) {
        defaultWorker = RegisteredWorker(name: name, worker: worker, budget: budget ?? defaultBudget, maxConcurrent: maxConcurrent)
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
