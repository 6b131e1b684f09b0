/// A worker as routed: its name (the result's `worker` field), the worker and its budget.
public struct RegisteredWorker: Sendable {
    /// The worker's name, reported in the result's `worker` field, e.g. `exec:content-update`.
    public var name: String
    /// The worker.
    public var worker: any Worker
    /// The time the worker gets from its start (the contract's budget; default 30 s). ``init(name:worker:budget:maxConcurrent:)``
    /// clamps it to the configuration file's range, 1 ms … 2 147 483 647 ms (about 24.8 days).
    public var budget: Duration
    /// The most jobs of this worker running at once, or `nil` for no limit beyond the dispatcher's
    /// `maxInFlight`. Jobs held back by it do not hold back other workers' jobs, and their budget has not
    /// started.
    public var maxConcurrent: Int?
    /// When its `failed` jobs run again, or `nil` (the default) for the service's default policy
    /// (`retries` in the configuration file; ``RetryPolicy/standard`` unless set).
    public var retry: RetryPolicy?

    /// The longest budget: 2 147 483 647 ms (about 24.8 days), the largest `budgetMs` the configuration file takes.
    public static let maxBudget = Duration.milliseconds(Int64(Int32.max))

    /// Creates a registration.
    /// - Parameters:
    ///   - budget: the worker's budget; below 1 ms counts as 1 ms, above ``maxBudget`` as ``maxBudget``
    ///     (a deadline further out than that would overflow the timers and UNIX-ms deadlines).
    ///   - maxConcurrent: the most of its jobs running at once (at least 1), or `nil` for no limit of its own.
    ///   - retry: its retry policy, or `nil` for the service's default.
    public init(name: String, worker: any Worker, budget: Duration, maxConcurrent: Int? = nil, retry: RetryPolicy? = nil) {
        self.retry = retry
        self.name = name
        self.worker = worker
        self.budget = min(max(budget, .milliseconds(1)), Self.maxBudget)
        self.maxConcurrent = maxConcurrent.map { max(1, $0) }
    }
}
